package gitcheck

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// BenchmarkCheckMerges: a range of 3000 commits, a third of them merges
// (each taking its side's file), checked in one go: the merges must cost
// a process or two, not one per merge.
func BenchmarkCheckMerges(b *testing.B) {
	const n = 1000
	f := newFixture(b)
	var s strings.Builder
	content := func(name string) string { return "package a // " + name + "\n" }
	blob := func(path, name string) {
		c := content(name)
		fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", path, len(c), c)
	}
	commit := func(ref, mark, from, merge string) {
		fmt.Fprintf(&s, "commit %s\nmark %s\ncommitter t <t@t> 1700000000 +0000\ndata 0\nfrom %s\n", ref, mark, from)
		if merge != "" {
			fmt.Fprintf(&s, "merge %s\n", merge)
		}
	}
	prev := f.base
	for i := 0; i < n; i++ {
		c, side, m := fmt.Sprintf("src/c%d.go", i), fmt.Sprintf("src/s%d.go", i), fmt.Sprintf(":%d", 3*i+3)
		commit("refs/heads/main", fmt.Sprintf(":%d", 3*i+1), prev, "")
		blob(c, c)
		commit("refs/heads/side", fmt.Sprintf(":%d", 3*i+2), prev, "")
		blob(side, side)
		commit("refs/heads/main", m, fmt.Sprintf(":%d", 3*i+1), fmt.Sprintf(":%d", 3*i+2))
		blob(side, side)
		f.record(ledger.EventCreate, "INT-001", c, content(c))
		f.record(ledger.EventCreate, "INT-001", side, content(side))
		prev = m
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--force")
	cmd.Dir, cmd.Stdin = f.dir, strings.NewReader(s.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := f.c.Check(context.Background(), []string{f.base + "..refs/heads/main"})
		if err != nil || !rep.OK() || rep.Commits != 3*n {
			b.Fatalf("check: %v, %d commits, problems %v", err, rep.Commits, rep.Problems)
		}
	}
}
