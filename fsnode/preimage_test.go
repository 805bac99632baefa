package fsnode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/policy"
)

// TestChangeRefusedWhenPreImageCannotBeKept: every change that destroys
// a version is refused, and recorded as a PREIMAGE_UNAVAILABLE denial,
// when the store's bound cannot take that version; the file is left as
// it was. A version already stored costs nothing.
func TestChangeRefusedWhenPreImageCannotBeKept(t *testing.T) {
	big := strings.Repeat("x", 4096)
	for _, tc := range []struct {
		name string
		do   func(k *kernel) fuse.Status
	}{
		{"open with O_TRUNC", func(k *kernel) fuse.Status { return k.write("src/a.txt", "new\n") }},
		{"create over it", func(k *kernel) fuse.Status { return k.create("src/a.txt", "new\n") }},
		{"truncate", func(k *kernel) fuse.Status { return k.truncate("src/a.txt", 1) }},
		{"unlink of a hard-linked file", func(k *kernel) fuse.Status { return k.unlink("src/a.txt") }},
		{"rename over a hard-linked file", func(k *kernel) fuse.Status {
			if st := k.create("src/b.txt", "b\n"); st != fuse.OK {
				return st
			}
			k.gov.take()
			return k.rename("src/b.txt", "src/a.txt", 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			if err := os.MkdirAll(filepath.Join(src, "src"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, "src", "a.txt"), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
			// A second link: an unlink must then copy, not link.
			if err := os.Link(filepath.Join(src, "src", "a.txt"), filepath.Join(src, "other")); err != nil {
				t.Fatal(err)
			}
			in, _, err := policy.ParseIntents("p.yaml", []byte(rawPolicy))
			if err != nil {
				t.Fatal(err)
			}
			store := objects.New(src)
			if err := store.MakePrivate(); err != nil {
				t.Fatal(err)
			}
			if _, err := store.SetBound(1024); err != nil {
				t.Fatal(err)
			}
			k := newKernelStore(t, src, &fakeGovernor{snap: &policy.Snapshot{Intents: in}, intent: "INT-001"}, store)
			if st := tc.do(k); st != fuse.Status(28) { // ENOSPC
				t.Fatalf("status %v, want ENOSPC", st)
			}
			if b, err := os.ReadFile(filepath.Join(src, "src", "a.txt")); err != nil || string(b) != big {
				t.Errorf("src/a.txt changed although the change was refused (%v)", err)
			}
			recs, denials := k.gov.take()
			if len(recs) != 0 {
				t.Errorf("records %v for a refused change", summary(recs))
			}
			if len(denials) != 1 || denials[0].Code != fsnode.CodePreimageUnavailable || !strings.Contains(denials[0].Reason, "intentfs gc") {
				t.Errorf("denials %+v, want one PREIMAGE_UNAVAILABLE naming intentfs gc", denials)
			}
		})
	}
}
