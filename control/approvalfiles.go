package control

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/policy"
)

// maxRequestPaths bounds the globs of one scope request; maxWhy its
// explanation.
const (
	maxRequestPaths = 16
	maxWhy          = 1024
)

// readPending is .intentfs/pending: what waits for a human, one line
// each, then the recent decisions, so an agent can tell that it waits,
// on what, and how its request ended.
func (d *Dir) readPending(*fuse.Caller) []byte {
	pending, recent := d.backend.Approvals()
	return []byte(FormatPending(pending, recent, time.Now()))
}

// FormatPending writes what waits and what was decided, escaped, one
// line each.
func FormatPending(pending []Pending, recent []Decision, now time.Time) string {
	var b strings.Builder
	esc := textsafe.Escape
	if len(pending) == 0 {
		b.WriteString("nothing waits for a human\n")
	}
	for _, p := range pending {
		who := ""
		if p.Process != nil {
			who = fmt.Sprintf(" pid=%d comm=%s", p.Process.Pid, esc(p.Process.Comm))
		}
		if p.Session != "" {
			who += " session=" + esc(p.Session)
		}
		waited := now.Sub(p.Since).Round(time.Second)
		if p.Kind == PendingScopeRequest {
			fmt.Fprintf(&b, "%d scope_request intent=%s paths=%s%s waiting=%s: %s\n", p.ID, esc(p.Intent), esc(strings.Join(p.Paths, ",")), who, waited, esc(p.Why))
			continue
		}
		target := esc(p.Path)
		if p.Path2 != "" {
			target += " -> " + esc(p.Path2)
		}
		fmt.Fprintf(&b, "%d held %s %s intent=%s rule=%s%s waiting=%s denied_in=%s: %s\n", p.ID, esc(p.Op), target, esc(p.Intent), esc(p.Rule), who, waited,
			max(p.Deadline.Sub(now), 0).Round(time.Second), esc(p.Why))
	}
	if len(recent) > 0 {
		b.WriteString("# decided (newest last)\n")
	}
	for _, dec := range recent {
		what := esc(dec.Pending.Op) + " " + esc(dec.Pending.Path)
		if dec.Pending.Kind == PendingScopeRequest {
			what = "scope_request " + esc(strings.Join(dec.Pending.Paths, ","))
		}
		extra := ""
		if dec.Reason != "" {
			extra = ": " + esc(dec.Reason)
		}
		fmt.Fprintf(&b, "%d %s %s by %s at %s%s\n", dec.Pending.ID, esc(dec.Verdict), what, esc(dec.By), dec.At.UTC().Format(time.RFC3339), extra)
	}
	return b.String()
}

// writeRequest is .intentfs/request: an agent asks for more scope, in
// two lines, in one write or one each (bash writes a printf line by line):
//
//	paths: src/cache/** docs/cache.md
//	why: the cache needs its own module and page
func (d *Dir) writeRequest(data []byte, caller *fuse.Caller) syscall.Errno {
	by := d.describe(caller)
	paths, why, err := ParseScopeRequest(data)
	if err != nil {
		d.backend.InvalidControlWrite("request", data, err, by)
		return syscall.EINVAL
	}
	if _, err := d.backend.RequestScope(paths, why, by); err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return syscall.EBUSY
		}
		d.backend.InvalidControlWrite("request", data, err, by)
		return syscall.EINVAL
	}
	return 0
}

// partialScopeRequest reports whether data is the start of a scope
// request that a further write completes: known lines only, and one of
// `paths:` and `why:` still missing (bash writes each line of a printf
// on its own).
func partialScopeRequest(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	var paths, why bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		key, _, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(key) {
		case "paths":
			paths = true
		case "why":
			why = true
		default:
			if strings.TrimSpace(line) != "" {
				return false
			}
		}
	}
	return paths != why
}

// ParseScopeRequest reads a scope request: a `paths:` line of globs and a
// `why:` line, at most 4 KiB in all.
func ParseScopeRequest(data []byte) (paths []string, why string, err error) {
	if len(data) > maxControlWrite {
		return nil, "", errors.New("write larger than 4 KiB")
	}
	if !utf8.Valid(data) {
		return nil, "", errors.New("not text")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		key, val, ok := strings.Cut(line, ":")
		switch strings.TrimSpace(key) {
		case "paths":
			paths = append(paths, strings.Fields(val)...)
		case "why":
			why = strings.TrimSpace(val)
		default:
			if ok || strings.TrimSpace(line) != "" {
				return nil, "", fmt.Errorf("unknown line %q: write `paths: GLOB...` and `why: REASON`", line)
			}
		}
	}
	switch {
	case len(paths) == 0:
		return nil, "", errors.New("no `paths:` line: name the globs you need, e.g. paths: src/cache/**")
	case len(paths) > maxRequestPaths:
		return nil, "", fmt.Errorf("%d paths: ask for at most %d at once", len(paths), maxRequestPaths)
	case why == "":
		return nil, "", errors.New("no `why:` line: say why you need them")
	case len(why) > maxWhy:
		return nil, "", fmt.Errorf("why is %d bytes: keep it under %d", len(why), maxWhy)
	case strings.IndexFunc(why, func(r rune) bool { return r < 0x20 }) >= 0:
		return nil, "", errors.New("why holds control characters")
	}
	for _, p := range paths {
		if err := policy.CheckGlob(p); err != nil {
			return nil, "", fmt.Errorf("path %q: %v", p, err)
		}
	}
	return paths, why, nil
}
