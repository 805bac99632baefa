package attribution

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

func contentHash(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// A Classifier answers as Classify over chains of edits of real Go files,
// each version the next one's starting point, as an agent or an editor
// saving again and again: comments added, bytes inserted and deleted,
// strings and comments opened, lines joined.
func TestClassifierMatchesClassifyOverEditChains(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go sources to edit: %v", err)
	}
	inserts := []string{"// note\n", "/* c */", " ", "\n", "x", "\"", "`", "/*", "*/", ";", "\r", "\ufeff", "0x", ".5", "...", "\x00"}
	rng := rand.New(rand.NewPCG(3, 4))
	c := NewClassifier()
	c.spacing = 16 // many remembered starts, so edits fall near them
	counts := map[ledger.MutationClass]int{}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// Several chains per file; a chain that breaks the source keeps
		// going from the broken version, as an editor's would.
		for range 20 {
			cur := src
			for range 30 {
				at := rng.IntN(len(cur) + 1)
				var next []byte
				switch rng.IntN(4) {
				case 0:
					ins := inserts[rng.IntN(len(inserts))]
					next = append(append(append([]byte{}, cur[:at]...), ins...), cur[at:]...)
				case 1:
					end := min(len(cur), at+1+rng.IntN(8))
					next = append(append([]byte{}, cur[:at]...), cur[end:]...)
				case 2:
					next = append(append([]byte{}, cur...), "// edit\n"...)
				default: // back to the file as it was
					next = src
				}
				want := Classify(name, cur, next, "")
				if got := c.Classify(name, cur, contentHash(cur), next, contentHash(next), ""); got != want {
					t.Fatalf("%s, edit at %d: Classifier says %s, Classify %s\n%q", name, at, got, want, next[max(0, at-20):min(len(next), at+20)])
				}
				counts[want]++
				cur = next
			}
		}
	}
	if counts[ledger.ClassDocumentation] == 0 || counts[ledger.ClassEvolution] == 0 {
		t.Fatalf("edits did not exercise both answers: %v", counts)
	}
}

// After a comment is added at the end of a Go file, the Classifier knows
// a token start of the new version near its end: the next such edit
// scans from there, not from the top.
func TestClassifierRemembersWhereTheNextEditCanStart(t *testing.T) {
	src, err := os.ReadFile("attribution.go")
	if err != nil {
		t.Fatal(err)
	}
	c := NewClassifier()
	cur := src
	for i := range 3 {
		next := append(append([]byte{}, cur...), "// edit\n"...)
		if got := c.Classify("a.go", cur, contentHash(cur), next, contentHash(next), ""); got != ledger.ClassDocumentation {
			t.Fatalf("edit %d classified %s", i, got)
		}
		starts := c.lookup(contentHash(next))
		if len(starts) == 0 || int(starts[len(starts)-1]) < len(next)-2*checkpointSpacing {
			t.Fatalf("edit %d: remembered starts %v of a %d-byte version", i, starts, len(next))
		}
		cur = next
	}
	// Nothing is remembered without a hash to find it by.
	c2 := NewClassifier()
	c2.Classify("a.go", src, "", append(append([]byte{}, src...), "// x\n"...), "", "")
	if len(c2.known) != 0 {
		t.Fatalf("remembered %d versions without hashes", len(c2.known))
	}
}

// The memory is bounded, in versions and in starts.
func TestClassifierForgetsWhenFull(t *testing.T) {
	c := NewClassifier()
	for i := range maxRememberedVersions + 10 {
		c.remember(contentHash([]byte{byte(i), byte(i >> 8)}), []int32{0})
	}
	if len(c.known) > maxRememberedVersions {
		t.Fatalf("%d versions remembered", len(c.known))
	}
	big := make([]int32, maxRememberedStarts/4)
	for i := range 10 {
		c.remember(contentHash([]byte{byte(i)}), big)
		c.remember(contentHash([]byte{byte(i)}), big) // the same version again counts once
	}
	total := 0
	for _, s := range c.known {
		total += len(s)
	}
	if total > maxRememberedStarts || total != c.starts {
		t.Fatalf("%d starts remembered, %d counted", total, c.starts)
	}
}
