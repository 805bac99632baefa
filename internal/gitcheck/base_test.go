package gitcheck

import (
	"context"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/policy"
)

// TestDefaultRange: the base comes from the daemon's mirror when there
// is one; a base from a ref of the clone (which an agent in the mount
// can write) is refused on a clone with a ledger and used, named, on one
// without.
func TestDefaultRange(t *testing.T) {
	declared := &policy.Upstream{URL: "/nonexistent/up.git", Ref: "refs/heads/main"}
	const mirror = ".git/intentfs/upstream.git"
	tests := []struct {
		name      string
		setup     string // shell run in the clone; $base is the base commit
		declared  *policy.Upstream
		hasLedger bool
		wantBase  bool   // the range is base..HEAD (else HEAD)
		wantFrom  string // in From, or in the error
		wantErr   bool
	}{
		{"no upstream: all of HEAD", "", nil, true, false, "no upstream", false},
		{"@{upstream} on a fresh clone is used, and named", "git remote add origin /x && git update-ref refs/remotes/origin/main $base && git branch -q -u origin/main",
			nil, false, true, "refs/remotes/origin/main", false},
		{"@{upstream} where the clone has a ledger is refused", "git remote add origin /x && git update-ref refs/remotes/origin/main $base && git branch -q -u origin/main",
			nil, true, false, "refs/remotes/origin/main, a ref an agent in the mount can write", true},
		{"the declared upstream's remote ref where the clone has a ledger is refused", "git remote add up /nonexistent/up.git && git update-ref refs/remotes/up/main HEAD",
			declared, true, false, "refs/remotes/up/main", true},
		{"the mirror's tip, whatever the clone's refs say", "git remote add up /nonexistent/up.git && git update-ref refs/remotes/up/main HEAD && " +
			"git init -q --bare " + mirror + " && git push -q " + mirror + " $base:refs/intentfs/upstream",
			declared, true, true, "the daemon's mirror of the declared upstream", false},
		{"a mirror tip the clone lacks: said, then the ref is refused", "git remote add up /nonexistent/up.git && git update-ref refs/remotes/up/main HEAD && " +
			"git init -q --bare " + mirror + " && t=$(git --git-dir=" + mirror + " hash-object -t tree -w --stdin </dev/null) && " +
			"c=$(git --git-dir=" + mirror + " commit-tree -m other $t) && git --git-dir=" + mirror + " update-ref refs/intentfs/upstream $c",
			declared, true, false, "which this clone does not have", true},
		{"a mirror without the upstream fetched on a fresh clone: the remote ref", "git remote add up /nonexistent/up.git && git update-ref refs/remotes/up/main $base && git init -q --bare " + mirror,
			declared, false, true, "refs/remotes/up/main", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			gittest.Commit(t, f.dir, "more", map[string]string{"README.md": "# p2\n"})
			if tc.setup != "" {
				if out, err := shIn(f.dir, "base="+f.base+" && "+tc.setup); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			}
			d, err := DefaultRange(context.Background(), f.c.Repo, f.dir, tc.declared, tc.hasLedger)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.wantFrom) || !strings.Contains(err.Error(), "intentfs check <base>..HEAD") {
					t.Errorf("error %q does not say %q and how to give the range", err, tc.wantFrom)
				}
				return
			}
			want := "HEAD"
			if tc.wantBase {
				want = f.base + "..HEAD"
			}
			if strings.Join(d.Revs, " ") != want || !strings.Contains(d.From, tc.wantFrom) {
				t.Errorf("range %v from %q; want %s from %q", d.Revs, d.From, want, tc.wantFrom)
			}
		})
	}
}
