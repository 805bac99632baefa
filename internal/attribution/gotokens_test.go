package attribution

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestSameGoTokensMatchesAFullScan checks the shared-prefix shortcut
// against comparing the two sources scanned from their starts, over many
// edits of real Go files: comments added, bytes inserted and deleted,
// strings and comments opened, lines joined.
func TestSameGoTokensMatchesAFullScan(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go sources to edit: %v", err)
	}
	inserts := []string{"// note\n", "/* c */", " ", "\n", "x", "\"", "`", "/*", "*/", ";", "\r", "\ufeff", "0x", ".5", "..."}
	rng := rand.New(rand.NewPCG(1, 2))
	same, differ := 0, 0
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for range 300 {
			at := rng.IntN(len(src) + 1)
			var edited []byte
			switch rng.IntN(3) {
			case 0: // insert
				ins := inserts[rng.IntN(len(inserts))]
				edited = append(append(append([]byte{}, src[:at]...), ins...), src[at:]...)
			case 1: // delete a few bytes
				end := min(len(src), at+1+rng.IntN(8))
				edited = append(append([]byte{}, src[:at]...), src[end:]...)
			default: // append a comment at the end, as the benchmark's edits do
				edited = append(append([]byte{}, src...), "// edit\n"...)
			}
			want := sameGoTokensFrom(src, edited)
			if got := sameGoTokens(src, edited); got != want {
				t.Fatalf("%s, edit at %d: shortcut says %v, full scan %v\n%q", name, at, got, want, edited[max(0, at-20):min(len(edited), at+20)])
			}
			if want {
				same++
			} else {
				differ++
			}
		}
	}
	if same == 0 || differ == 0 {
		t.Fatalf("edits did not exercise both answers: %d same, %d different", same, differ)
	}
}
