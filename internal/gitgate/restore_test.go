package gitgate

import (
	"strings"
	"testing"
)

// TestParseHistory: every version a path took is kept with the newest
// commit holding it; deletions, symlinks, submodules and other paths are
// not versions of the file.
func TestParseHistory(t *testing.T) {
	c1, c2, c3 := strings.Repeat("1", 40), strings.Repeat("2", 40), strings.Repeat("3", 40)
	b1, b2, link := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	zero := strings.Repeat("0", 40)
	out := "\x01" + c3 + "\x00\n:100644 000000 " + b2 + " " + zero + " D\x00f\x00" +
		"\x01" + c2 + "\x00\n:100644 100644 " + b1 + " " + b2 + " M\x00f\x00" +
		":000000 120000 " + zero + " " + link + " A\x00f\x00" +
		":000000 100644 " + zero + " " + link + " A\x00f/g\x00" +
		"\x01" + c1 + "\x00\n:000000 100644 " + zero + " " + b1 + " A\x00f\x00"
	got := map[string]string{}
	parseHistory([]byte(out), "f", got)
	want := map[string]string{b2: c2, b1: c1}
	if len(got) != len(want) || got[b1] != c1 || got[b2] != c2 {
		t.Fatalf("parseHistory = %v, want %v", got, want)
	}
}
