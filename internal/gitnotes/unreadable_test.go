package gitnotes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
)

// TestReadBrokenNotesRef: a notes ref at a tree git cannot read (which an
// agent in the mount can write) fails Read; Unreadable names the ref and
// the way out, escaped.
func TestReadBrokenNotesRef(t *testing.T) {
	dir := t.TempDir()
	gittest.Init(t, dir)
	if out, err := gittest.Sh(dir, "git commit -q --allow-empty -m a && t=$(printf '040000 tree 1111111111111111111111111111111111111111\\tab\\n' | git mktree --missing) && git update-ref "+Ref+" $(git commit-tree -m n $t)"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(context.Background(), repo)
	if err == nil {
		t.Fatal("Read of a broken notes ref succeeded")
	}
	u := Unreadable(err)
	for _, s := range []string{u.Error(), u.Notice()} {
		if !strings.Contains(s, "the notes under refs/notes/intentfs cannot be read") || !strings.Contains(s, "git update-ref -d refs/notes/intentfs") || !strings.Contains(s, "intentfs notes sync") {
			t.Errorf("text %q does not name the ref and the way out", s)
		}
	}
	if !strings.Contains(u.Notice(), "they are not counted") || !errors.Is(u, err) {
		t.Errorf("notice %q / unwrap", u.Notice())
	}
	if got := Unreadable(errors.New("a\x1b[2Jb")).Error(); strings.Contains(got, "\x1b") {
		t.Errorf("control byte not escaped: %q", got)
	}
}
