package gitcheck

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
)

func TestRevNames(t *testing.T) {
	tests := []struct {
		revs []string
		want string
	}{
		{[]string{"a..b"}, "a b"},
		{[]string{"a...b"}, "a b"},
		{[]string{"^a", "b"}, "a b"},
		{[]string{"..b"}, "b"},
		{[]string{"a.."}, "a"},
		{[]string{"a^!"}, "a"},
		{[]string{"a~2..b^2"}, "a b"},
		{[]string{"main@{0}"}, "main@{0}"},
		{[]string{"x..@{-1}"}, "x @{-1}"},
		{[]string{"main@{0}^..b"}, "main@{0} b"},
		{[]string{":/msg"}, ""},
		{[]string{"refs/heads/main^{commit}"}, "refs/heads/main"},
	}
	for _, tc := range tests {
		if got := strings.Join(revNames(tc.revs), " "); got != tc.want {
			t.Errorf("revNames(%q) = %q, want %q", tc.revs, got, tc.want)
		}
	}
}

func TestAdviseable(t *testing.T) {
	oid := strings.Repeat("ab", 20)
	tests := []struct {
		name string
		want bool
	}{
		{"main", true},
		{"feature/x", true},
		{"v1.0", true},
		{"refs/heads/main", false},
		{"heads/refs/heads/main", false},
		{"x/refs/heads/main", false},
		{oid, false},
		{"feature/" + oid, false},
		{strings.Repeat("c", 64), false},
		{"", false},
	}
	for _, tc := range tests {
		if got := adviseable(tc.name); got != tc.want {
			t.Errorf("adviseable(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCheckNamesRules: each rule of CheckNames against refs an agent
// could make: a branch named after the base's full id, a branch named
// refs/heads/main, a branch named after a short id, and reflog names.
func TestCheckNamesRules(t *testing.T) {
	f := newFixture(t)
	gittest.Commit(t, f.dir, "more", map[string]string{"README.md": "# p2\n"})
	short := f.base[:10]
	for _, ref := range []string{"refs/heads/" + f.base, "refs/heads/refs/heads/main", "refs/heads/" + short, "refs/tags/dup", "refs/heads/dup"} {
		gittest.Git(t, f.dir, "update-ref", ref, "HEAD")
	}
	const (
		ok = iota
		ambiguous
		reflog
		exact
		search
	)
	tests := []struct {
		revs   []string
		want   int
		advice string // in the error
	}{
		{[]string{f.base + "..main"}, ok, ""},
		{[]string{strings.ToUpper(f.base) + "..main"}, ok, ""},
		{[]string{f.base + "..refs/heads/main"}, ok, ""},
		{[]string{"^" + f.base, "refs/heads/main"}, ok, ""},
		{[]string{f.base + "..HEAD"}, ok, ""},
		{[]string{f.base + "..refs/heads/nope"}, exact, "no ref is named refs/heads/nope exactly"},
		{[]string{f.base + "..refs/main"}, exact, ""},
		{[]string{short + "..main"}, ambiguous, "give the full commit id"},
		{[]string{f.base + "..dup"}, ambiguous, "name it in full (refs/heads/dup)"},
		{[]string{f.base + "..main@{0}"}, reflog, "main@{0} reads the reflog, which the agent can write in the mount: name a commit id or a branch"},
		{[]string{"@{1}..main"}, reflog, ""},
		{[]string{f.base + "..main@{yesterday}"}, reflog, ""},
		{[]string{"@{-1}"}, reflog, ""},
		{[]string{"main@{upstream}..HEAD"}, reflog, ""},
		{[]string{"HEAD@{0}~1..HEAD"}, reflog, ""},
		{[]string{":/more..HEAD"}, search, "names a commit by a search the agent can steer"},
		{[]string{f.base + "..:/more"}, search, ""},
		{[]string{"main^{/more}"}, search, ""},
		{[]string{"^:/base", "HEAD"}, search, ""},
		{[]string{f.base + "..main:README.md"}, ok, ""}, // a path after a name is not a search (git then refuses it)
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.revs, " "), func(t *testing.T) {
			err := CheckNames(context.Background(), f.c.Repo, tc.revs)
			var amb *AmbiguousError
			var rl *ReflogError
			var ex *ExactRefError
			var se *SearchError
			got := ok
			switch {
			case errors.As(err, &amb):
				got = ambiguous
			case errors.As(err, &rl):
				got = reflog
			case errors.As(err, &ex):
				got = exact
			case errors.As(err, &se):
				got = search
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			}
			if got != tc.want {
				t.Fatalf("got %d (%v), want %d", got, err, tc.want)
			}
			if tc.advice != "" && !strings.Contains(err.Error(), tc.advice) {
				t.Errorf("error %q does not say %q", err, tc.advice)
			}
			if err != nil && strings.Contains(err.Error(), "refs/heads/"+f.base) && strings.Contains(err.Error(), "name it in full (refs/heads/"+f.base) {
				t.Errorf("error advises the agent's branch: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "(refs/heads/refs/") {
				t.Errorf("error advises a nested ref: %v", err)
			}
		})
	}
}

func TestNamedBases(t *testing.T) {
	oid := strings.Repeat("ab", 20)
	tests := []struct {
		revs []string
		want string
	}{
		{[]string{"origin/main..main"}, "origin/main"},
		{[]string{oid + "..main"}, ""},
		{[]string{"..main"}, ""},
		{[]string{"HEAD~3..HEAD"}, ""},
		{[]string{"^release", "main"}, "release"},
		{[]string{"v1.0^{commit}..main"}, "v1.0"},
		{[]string{"a...b"}, "a b"},
		{[]string{"main"}, ""},
	}
	for _, tt := range tests {
		if got := strings.Join(NamedBases(tt.revs), " "); got != tt.want {
			t.Errorf("NamedBases(%q) = %q, want %q", tt.revs, got, tt.want)
		}
	}
}
