package gitnotes

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/ledger"
)

// ledgerLines writes n records to a new ledger of its own (a header
// first) and returns its raw lines.
func ledgerLines(t *testing.T, source string, n int) [][]byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := ledger.OpenWriter(path, ledger.WriterOptions{Source: source, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: fmt.Sprintf("src/%s%d.go", source, i), Intent: "INT-001",
			PostHash: gittest.Sha(source)}, "test"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	if err := ledger.ScanRaw(path, func(_ string, _ int, raw []byte) error {
		if len(raw) > 0 {
			lines = append(lines, append([]byte(nil), raw...))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestCount(t *testing.T) {
	a := ledgerLines(t, "a", 3) // the local ledger's lines
	b := ledgerLines(t, "b", 2) // another origin's
	forged := []byte(`{"id":"6a1e2b3c-4d5e-4f60-8172-839405a6b7c8","files":[{"path":"README.md"}],"metadata":{"dev.intentfs":{"event":"revert","post_hash":"sha256:00"}}}`)
	// A record claiming to follow a's last line: a's chain, but not in
	// the local ledger (as if the agent extended it in the notes).
	extend := []byte(strings.Replace(string(forged), `"event":"revert"`, `"event":"revert","prev":"`+ledger.LineHash(a[len(a)-1])+`"`, 1))
	extend = []byte(strings.Replace(string(extend), "6a1e2b3c", "7b1e2b3c", 1))
	// A record forking b's chain after its header.
	fork := []byte(strings.Replace(string(forged), `"event":"revert"`, `"event":"revert","prev":"`+ledger.LineHash(b[0])+`"`, 1))
	fork = []byte(strings.Replace(string(fork), "6a1e2b3c", "8c1e2b3c", 1))

	local := NewLocal()
	for _, raw := range a {
		var r ledger.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		local.Add(raw, &r)
	}
	tests := []struct {
		name                 string
		lines                [][]byte
		local                *Local
		own, others, ignored int
	}{
		{"no local ledger: every whole chain counts, a forged line never", cat(a, b, [][]byte{forged}), nil, 0, len(a) + len(b), 1},
		{"local ledger: its own lines, other origins apart", cat(a, b, [][]byte{forged}), local, len(a), len(b), 1},
		{"a line extending the local chain that the local ledger lacks", cat(a, [][]byte{extend}), local, len(a), 0, 1},
		{"without a local ledger, the extended chain is whole", cat(a, [][]byte{extend}), nil, 0, len(a) + 1, 0},
		{"a fork makes the chain count for nothing", cat(b, [][]byte{fork}), nil, 0, 0, len(b) + 1},
		{"a chain without its header counts for nothing", b[1:], nil, 0, 0, len(b) - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := &Set{ids: map[string]int{}}
			for _, l := range tc.lines {
				set.add("c0ffee", l)
			}
			c := Count(set, tc.local)
			if len(c.Own) != tc.own || len(c.Others) != tc.others || len(c.Ignored) != tc.ignored {
				t.Errorf("own %d, others %d, ignored %d; want %d, %d, %d (ignored: %s)", len(c.Own), len(c.Others), len(c.Ignored),
					tc.own, tc.others, tc.ignored, ids(c.Ignored))
			}
		})
	}
}

func cat(ls ...[][]byte) [][]byte {
	var out [][]byte
	for _, l := range ls {
		out = append(out, l...)
	}
	return out
}

func ids(ls []Line) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Record.ID)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}
