package gitcheck

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/ledger"
)

// TestCheckNewWithKnownParentsAndAKeptCatFile: the mount's way of
// checking (the parents from its rev-list --parents, one cat-file kept
// across checks) finds what a check that asks git for both finds: an
// unrecorded commit, an evil merge, a clean merge, a recorded commit;
// and the kept cat-file reads objects written after it started.
func TestCheckNewWithKnownParentsAndAKeptCatFile(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	blobs, err := f.c.Repo.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	// Every commit below is written after the cat-file started.
	f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a\n\nfunc A() {}\n")
	good := gittest.Commit(t, f.dir, "recorded", map[string]string{"src/a.go": "package a\n\nfunc A() {}\n"})
	gittest.Git(t, f.dir, "checkout", "-q", "-b", "side", f.base)
	bad := gittest.Commit(t, f.dir, "unrecorded", map[string]string{"go.mod": "module y\n"})
	gittest.Git(t, f.dir, "checkout", "-q", "main")
	gittest.Git(t, f.dir, "merge", "-q", "--no-edit", "side")
	clean := gittest.Git(t, f.dir, "rev-parse", "HEAD")
	evil, err := shIn(f.dir, "blob=$(echo pwned | git hash-object -w --stdin) && git read-tree "+clean+
		" && git update-index --cacheinfo 100644,$blob,README.md && tree=$(git write-tree) && git read-tree HEAD && git commit-tree -p "+good+" -p "+bad+" -m evil $tree")
	if err != nil {
		t.Fatalf("the evil merge: %v\n%s", err, evil)
	}
	evil = strings.TrimSpace(evil)
	parents := map[string][]string{}
	for _, l := range strings.Split(gittest.Git(t, f.dir, "rev-list", "--parents", "--all", evil), "\n") {
		if fs := strings.Fields(l); len(fs) > 0 {
			parents[fs[0]] = fs[1:]
		}
	}
	tests := []struct {
		name string
		ids  []string
		want []string // commit:path of each problem
	}{
		{"a recorded commit", []string{good}, nil},
		{"an unrecorded commit", []string{bad}, []string{bad + ":go.mod"}},
		{"a clean merge", []string{clean}, nil},
		{"an evil merge", []string{evil}, []string{evil + ":README.md"}},
		{"all of them", []string{good, bad, clean, evil}, []string{bad + ":go.mod", evil + ":README.md"}},
	}
	for _, tc := range tests {
		for _, mode := range []string{"asking git", "known parents, kept cat-file"} {
			c := *f.c
			if mode != "asking git" {
				c.Parents, c.Blobs = parents, blobs
			}
			rep, err := c.CheckNew(ctx, tc.ids)
			if err != nil {
				t.Fatalf("%s (%s): %v", tc.name, mode, err)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Commit+":"+p.Path)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s (%s): problems %v, want %v", tc.name, mode, got, tc.want)
			}
		}
	}
	if ms, ok := (&Checker{Parents: parents}).knownMerges([]string{good, "f00" + good[3:]}); ok || ms != nil {
		t.Errorf("parents of an unlisted commit were taken as known: %v", ms)
	}
}

// TestIndexAddWhileChecking: records are added while a check reads the
// index (the mount does not hold a lock across a check); run with -race.
func TestIndexAddWhileChecking(t *testing.T) {
	ix := NewIndex()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 2000 {
			ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001",
				PostHash: gittest.Sha(fmt.Sprint(i))}, "test"))
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 2000 {
			for _, e := range ix.Written("src/a.go", gittest.Sha(fmt.Sprint(i))) {
				_ = e.Intent
			}
			_ = ix.WroteAny("src/a.go")
			_ = ix.Len()
		}
	}()
	wg.Wait()
	if ix.Len() != 2000 || len(ix.Written("src/a.go", gittest.Sha("1999"))) != 1 {
		t.Fatalf("index holds %d records", ix.Len())
	}
}
