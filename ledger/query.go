package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Filter selects records. Zero fields match everything.
type Filter struct {
	Intent string
	// PathGlob matches a record's path or from_path (doublestar syntax).
	PathGlob string
	Since    time.Time
	Events   []Event
	Comm     string
	// ID selects one record.
	ID string
	// Session selects the records of one agent session.
	Session string
	// WouldDeny selects the changes made that the policy refuses: those
	// observe mode let through, recorded with scope_validation FAIL.
	WouldDeny bool
}

// Match reports whether r passes the filter.
func (f *Filter) Match(r *Record) bool {
	g := r.Gov()
	switch {
	case f.ID != "" && r.ID != f.ID:
		return false
	case f.Intent != "" && Str(g.IntentID) != f.Intent:
		return false
	case len(f.Events) > 0 && !slices.Contains(f.Events, g.Event):
		return false
	case f.Comm != "" && (g.Process == nil || g.Process.Comm != f.Comm):
		return false
	case f.Session != "" && (g.Session == nil || g.Session.ID != f.Session):
		return false
	case f.WouldDeny && (ClassOf(g.Event) == "" || g.ScopeValidation != "FAIL"):
		return false
	}
	if !f.Since.IsZero() {
		ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
		if err != nil || ts.Before(f.Since) {
			return false
		}
	}
	if f.PathGlob != "" {
		a, _ := doublestar.Match(f.PathGlob, r.Path())
		b := false
		if g.FromPath != "" {
			b, _ = doublestar.Match(f.PathGlob, g.FromPath)
		}
		if !a && !b {
			return false
		}
	}
	return true
}

// quick rejects lines that cannot match before they are decoded: decoding
// is most of the cost of a query over a large ledger.
func (f *Filter) quick(raw []byte) bool {
	if f.ID != "" && !bytes.Contains(raw, []byte(`"id":"`+f.ID+`"`)) {
		return false
	}
	if f.Intent != "" && !bytes.Contains(raw, []byte(`"intent_id":"`+f.Intent+`"`)) {
		return false
	}
	if f.Comm != "" && !bytes.Contains(raw, []byte(`"comm":`)) {
		return false
	}
	if f.Session != "" && !bytes.Contains(raw, []byte(`"session":{"id":"`+f.Session+`"`)) {
		return false
	}
	if f.WouldDeny && !bytes.Contains(raw, []byte(`"scope_validation":"FAIL"`)) {
		return false
	}
	if len(f.Events) == 1 && !bytes.Contains(raw, []byte(`"event":"`+string(f.Events[0])+`"`)) {
		return false
	}
	if f.PathGlob != "" && !strings.ContainsAny(f.PathGlob, "*?[{") && !bytes.Contains(raw, []byte(f.PathGlob)) {
		return false
	}
	return true
}

// rawExact reports whether quick decides the filter exactly, so matching
// lines need no decoding.
func (f *Filter) rawExact() bool {
	return f.PathGlob == "" && f.Since.IsZero() && f.Comm == "" && f.Session == "" && len(f.Events) <= 1 && !f.WouldDeny
}

// QueryRaw calls fn with the raw bytes (one JSON record, no newline) of
// every record the filter selects, in ledger order, decoding only when the
// filter cannot be decided from the bytes. raw is valid during the call.
func QueryRaw(path string, f Filter, fn func(raw []byte) error) error {
	exact := f.rawExact()
	return ScanRaw(path, func(file string, line int, raw []byte) error {
		if len(raw) == 0 || !f.quick(raw) {
			return nil
		}
		if !exact {
			var r Record
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("%s:%d: not a ledger record: %w", file, line, err)
			}
			if !f.Match(&r) {
				return nil
			}
		}
		return fn(raw)
	})
}

// Query calls fn, in ledger order, for every record the filter selects,
// across rotated files. It streams.
func Query(path string, f Filter, fn func(r *Record) error) error {
	return ScanRaw(path, func(file string, line int, raw []byte) error {
		if len(raw) == 0 || !f.quick(raw) {
			return nil
		}
		var r Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s:%d: not a ledger record: %w", file, line, err)
		}
		if !f.Match(&r) {
			return nil
		}
		return fn(&r)
	})
}

// ParseSince reads a --since value: a duration back from now ("2h",
// "30m", "7d") or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := time.ParseDuration(days + "h"); err == nil {
			return now.Add(-24 * d), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (30m, 2h, 7d) nor a time (2026-01-31 or RFC 3339)", s)
}
