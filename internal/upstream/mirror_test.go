package upstream_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/internal/upstream"
	"github.com/intentfs/intentfs/policy"
)

// fixture is an upstream bare repository with history, a human's work
// tree that pushes to it, and the agent's source: a clone of it.
type fixture struct {
	up, work, source string
	// main is upstream's main after the fixture's commits.
	main string
}

// newFixture builds the upstream's history: docs/guide.md written three
// times, gone.txt deleted, was/ a directory turned into a file, tree/
// added, bin/run.sh executable.
func newFixture(t *testing.T, base string) *fixture {
	t.Helper()
	f := &fixture{up: filepath.Join(base, "up.git"), work: filepath.Join(base, "work"), source: filepath.Join(base, "source")}
	gittest.Git(t, base, "init", "-q", "--bare", "-b", "main", f.up)
	gittest.Init(t, f.work)
	gittest.Commit(t, f.work, "base", map[string]string{"docs/guide.md": "v1\n", "gone.txt": "gone\n", "was/f.txt": "in a dir\n", "src/a.go": "package a\n"})
	gittest.Write(t, f.work, map[string]string{"bin/run.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(f.work, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, f.work, "rm", "-q", "gone.txt")
	gittest.Commit(t, f.work, "two", map[string]string{"docs/guide.md": "v2\n"})
	gittest.Git(t, f.work, "rm", "-rq", "was")
	f.main = gittest.Commit(t, f.work, "three", map[string]string{"docs/guide.md": "v3\n", "was": "now a file\n", "tree/x.txt": "x\n"})
	gittest.Git(t, f.work, "push", "-q", f.up, "HEAD:main")
	gittest.Git(t, base, "clone", "-q", f.up, f.source)
	return f
}

func (f *fixture) upstream() *policy.Upstream {
	return &policy.Upstream{URL: f.up, Ref: "refs/heads/main"}
}

func newMirror(t *testing.T, f *fixture) *upstream.Mirror {
	t.Helper()
	m := upstream.New(f.source, nil)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func TestMirrorEntriesAndVersions(t *testing.T) {
	f := newFixture(t, t.TempDir())
	m := newMirror(t, f)
	m.Configure(f.upstream())
	ctx := context.Background()
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	tip, err := m.Tip(ctx, 0)
	if err != nil || tip.Commit != f.main || tip.URL != f.up || tip.Ref != "refs/heads/main" || tip.FetchedAt.IsZero() {
		t.Fatalf("tip %+v %v, want commit %s", tip, err, f.main)
	}
	if st, err := os.Lstat(filepath.Join(f.source, upstream.MirrorRel, "HEAD")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("no bare mirror at %s: %v", upstream.MirrorRel, err)
	}
	tests := []struct {
		rel, kind, mode, sha string
	}{
		{"docs/guide.md", "blob", "100644", gittest.Sha("v3\n")},
		{"bin/run.sh", "blob", "100755", gittest.Sha("#!/bin/sh\n")},
		{"was", "blob", "100644", gittest.Sha("now a file\n")},
		{"tree", "tree", "040000", ""},
		{"gone.txt", "", "", ""},
		{"never", "", "", ""},
		{"docs/guide.md/below", "", "", ""},
		{"*", "", "", ""}, // literal: not a glob matching everything
	}
	for _, tc := range tests {
		e, err := m.Entry(ctx, tip, tc.rel)
		if err != nil || e.Kind != tc.kind || e.Mode != tc.mode || e.SHA256 != tc.sha {
			t.Errorf("Entry(%s) = %+v %v, want %s %s %s", tc.rel, e, err, tc.kind, tc.mode, tc.sha)
		}
	}
	e, _ := m.Entry(ctx, tip, "docs/guide.md")
	if b, err := m.Read(ctx, e.OID, 100); err != nil || string(b) != "v3\n" || e.Size != 3 {
		t.Fatalf("Read = %q %v (size %d)", b, err, e.Size)
	}
	if _, err := m.Read(ctx, e.OID, 2); err == nil {
		t.Fatal("Read past max")
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/."} {
		if _, err := m.Entry(ctx, tip, bad); err == nil {
			t.Errorf("Entry(%q) accepted", bad)
		}
		if _, err := m.Versions(ctx, tip, bad); err == nil {
			t.Errorf("Versions(%q) accepted", bad)
		}
	}
	if _, err := m.Read(ctx, "HEAD", 100); err == nil {
		t.Error("Read of a revision expression")
	}

	vtests := []struct {
		rel     string
		want    []string
		wasTree bool
	}{
		{"docs/guide.md", []string{"v1\n", "v2\n", "v3\n"}, false},
		{"gone.txt", []string{"gone\n"}, false},
		{"was", []string{"now a file\n"}, true},
		{"tree", nil, true},
		{"never", nil, false},
	}
	for _, tc := range vtests {
		h, err := m.Versions(ctx, tip, tc.rel)
		if err != nil {
			t.Fatalf("Versions(%s): %v", tc.rel, err)
		}
		if len(h.Blobs) != len(tc.want) || h.WasTree != tc.wasTree || h.Truncated {
			t.Errorf("Versions(%s) = %+v, want %d blobs, WasTree %v", tc.rel, h, len(tc.want), tc.wasTree)
		}
		for _, c := range tc.want {
			if !h.Blobs[gittest.Sha(c)] {
				t.Errorf("Versions(%s) lacks %q", tc.rel, c)
			}
		}
	}
	if st := m.Status(); !st.Configured || st.Commit != f.main || st.LastErr != "" || st.URL != f.up {
		t.Errorf("Status %+v", st)
	}
}

// TestKickFetchesInTheBackground: a new upstream commit reaches the tip
// after a Kick, and Tip waits for that fetch rather than answering with
// the old commit.
func TestKickFetchesInTheBackground(t *testing.T) {
	f := newFixture(t, t.TempDir())
	m := newMirror(t, f)
	ctx := context.Background()
	before := time.Now()
	m.Configure(f.upstream()) // starts the first fetch
	if tip, err := m.Tip(ctx, 30*time.Second); err != nil || tip.Commit != f.main {
		t.Fatalf("first tip %+v %v", tip, err)
	}
	next := gittest.Commit(t, f.work, "four", map[string]string{"docs/guide.md": "v4\n"})
	gittest.Git(t, f.work, "push", "-q", f.up, "HEAD:main")
	for range 20 {
		m.Kick() // one fetch, queued behind the debounce
	}
	tip, err := m.Tip(ctx, 30*time.Second)
	if err != nil || tip.Commit != next {
		t.Fatalf("tip %s %v, want the new commit %s", tip.Commit, err, next)
	}
	if st := m.Status(); st.Fetches != 2 || st.Fetching {
		t.Fatalf("after Configure and 20 Kicks: %d fetches (fetching %v), want 2", st.Fetches, st.Fetching)
	}
	if gap := tip.FetchedAt.Sub(before); gap < upstream.Debounce {
		t.Fatalf("the Kick's fetch ended %v after the first started, want at least the debounce %v", gap, upstream.Debounce)
	}
	e, err := m.Entry(ctx, tip, "docs/guide.md")
	if err != nil || e.SHA256 != gittest.Sha("v4\n") {
		t.Fatalf("Entry after the new commit: %+v %v", e, err)
	}
	// A different ref drops the tip and fetches the new one.
	gittest.Git(t, f.work, "push", "-q", f.up, f.main+":refs/heads/release")
	m.Configure(&policy.Upstream{URL: f.up, Ref: "refs/heads/release"})
	tip, err = m.Tip(ctx, 30*time.Second)
	if err != nil || tip.Commit != f.main || tip.Ref != "refs/heads/release" {
		t.Fatalf("tip after reconfiguring %+v %v, want %s", tip, err, f.main)
	}
}

// TestAgentRefsAreNotTrusted: commits the agent puts on another branch of
// the upstream, or in its own repository's refs, are not the mirror's tip.
func TestAgentRefsAreNotTrusted(t *testing.T) {
	f := newFixture(t, t.TempDir())
	gittest.Git(t, f.source, "config", "user.name", "agent")
	agent := gittest.Commit(t, f.source, "agent", map[string]string{"docs/guide.md": "pwned\n"})
	gittest.Git(t, f.source, "push", "-q", "origin", "HEAD:refs/heads/agent")
	gittest.Git(t, f.source, "update-ref", "refs/remotes/origin/main", agent)
	m := newMirror(t, f)
	m.Configure(f.upstream())
	ctx := context.Background()
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	tip, err := m.Tip(ctx, 0)
	if err != nil || tip.Commit != f.main {
		t.Fatalf("tip %s %v, want upstream main %s (not the agent's %s)", tip.Commit, err, f.main, agent)
	}
	h, err := m.Versions(ctx, tip, "docs/guide.md")
	if err != nil || h.Blobs[gittest.Sha("pwned\n")] {
		t.Fatalf("the agent's content is among upstream's versions: %+v %v", h, err)
	}
}

func TestNotConfigured(t *testing.T) {
	f := newFixture(t, t.TempDir())
	m := newMirror(t, f)
	ctx := context.Background()
	if _, err := m.Tip(ctx, time.Second); !errors.Is(err, upstream.ErrNotConfigured) {
		t.Fatalf("Tip without upstream: %v", err)
	}
	m.Kick() // nothing to do, and no fetch is waited for
	if err := m.Refresh(ctx); !errors.Is(err, upstream.ErrNotConfigured) {
		t.Fatalf("Refresh without upstream: %v", err)
	}
	m.Configure(f.upstream())
	if _, err := m.Tip(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	m.Configure(nil)
	if _, err := m.Tip(ctx, time.Second); !errors.Is(err, upstream.ErrNotConfigured) {
		t.Fatalf("Tip after Configure(nil): %v", err)
	}
	if st := m.Status(); st.Configured || st.Commit != "" {
		t.Fatalf("Status after Configure(nil): %+v", st)
	}
}

func TestFetchErrors(t *testing.T) {
	f := newFixture(t, t.TempDir())
	tests := []struct {
		name string
		u    policy.Upstream
		want string
	}{
		{"no such repository", policy.Upstream{URL: "/nonexistent/project.git", Ref: "refs/heads/main"}, "does not appear to be a git repository"},
		{"no such ref", policy.Upstream{URL: f.up, Ref: "refs/heads/nope"}, "couldn't find remote ref"},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMirror(t, f)
			m.Configure(&tc.u)
			err := m.Refresh(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.u.URL) {
				t.Fatalf("Refresh: %v, want an error naming %s and %q", err, tc.u.URL, tc.want)
			}
			if st := m.Status(); !strings.Contains(st.LastErr, tc.want) || st.Commit != "" {
				t.Fatalf("Status %+v", st)
			}
			_, err = m.Tip(ctx, 0)
			if !errors.Is(err, upstream.ErrNoTip) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Tip: %v", err)
			}
		})
	}
}

// TestUnvalidatedUpstreamIsRefused: an upstream that did not come through
// the policy's validation never reaches git's command line as an option
// or a second refspec.
func TestUnvalidatedUpstreamIsRefused(t *testing.T) {
	f := newFixture(t, t.TempDir())
	marker := filepath.Join(t.TempDir(), "ran")
	tests := []policy.Upstream{
		{URL: "--upload-pack=touch " + marker, Ref: "refs/heads/main"},
		{URL: f.up, Ref: "refs/heads/main:refs/heads/x"},
		{URL: f.up, Ref: "main"}, // not normalised
	}
	for _, u := range tests {
		m := newMirror(t, f)
		m.Configure(&u)
		if err := m.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "upstream") {
			t.Errorf("%+v: %v", u, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an option in the URL ran a program")
	}
	if out, _ := gittest.GitErr(f.source, "--git-dir="+upstream.MirrorRel, "show-ref"); strings.Contains(out, "refs/heads/x") {
		t.Fatal("a second refspec was fetched")
	}
}

// TestFailedFetchKeepsTheTip: when the upstream cannot be reached, the
// last tip stays (and can be read), and the failure is reported.
func TestFailedFetchKeepsTheTip(t *testing.T) {
	f := newFixture(t, t.TempDir())
	m := newMirror(t, f)
	m.Configure(f.upstream())
	ctx := context.Background()
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	must(t, os.Rename(f.up, f.up+".away"))
	if err := m.Refresh(ctx); err == nil {
		t.Fatal("a fetch from a missing upstream succeeded")
	}
	tip, err := m.Tip(ctx, 0)
	if err != nil || tip.Commit != f.main {
		t.Fatalf("tip after a failed fetch: %+v %v", tip, err)
	}
	if e, err := m.Entry(ctx, tip, "docs/guide.md"); err != nil || e.SHA256 != gittest.Sha("v3\n") {
		t.Fatalf("Entry after a failed fetch: %+v %v", e, err)
	}
	if st := m.Status(); !strings.Contains(st.LastErr, "does not appear to be a git repository") || st.Commit != f.main {
		t.Fatalf("Status %+v", st)
	}
	must(t, os.Rename(f.up+".away", f.up))
	if err := m.Refresh(ctx); err != nil || m.Status().LastErr != "" {
		t.Fatalf("Refresh once the upstream is back: %v, LastErr %q", err, m.Status().LastErr)
	}
}

// TestGitDirMustBeADirectory: a .git that is a symlink or a file, or a
// .git/intentfs that is a symlink, is refused, and nothing is created
// where it points.
func TestGitDirMustBeADirectory(t *testing.T) {
	ctx := context.Background()
	elsewhere := t.TempDir()
	tests := []struct {
		name  string
		setup func(t *testing.T, source string)
		want  string
	}{
		{"symlink .git", func(t *testing.T, source string) {
			must(t, os.Rename(filepath.Join(source, ".git"), filepath.Join(elsewhere, "real.git")))
			must(t, os.Symlink(filepath.Join(elsewhere, "real.git"), filepath.Join(source, ".git")))
		}, "a file or a symlink"},
		{"file .git", func(t *testing.T, source string) {
			must(t, os.RemoveAll(filepath.Join(source, ".git")))
			must(t, os.WriteFile(filepath.Join(source, ".git"), []byte("gitdir: "+elsewhere+"\n"), 0o644))
		}, "a file or a symlink"},
		{"symlink .git/intentfs", func(t *testing.T, source string) {
			must(t, os.Symlink(elsewhere, filepath.Join(source, ".git", "intentfs")))
		}, "symlink is not followed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, t.TempDir())
			tc.setup(t, f.source)
			m := newMirror(t, f)
			m.Configure(f.upstream())
			if err := m.Refresh(ctx); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Refresh: %v, want %q", err, tc.want)
			}
			for _, p := range []string{filepath.Join(elsewhere, "upstream.git"), filepath.Join(elsewhere, "real.git", "intentfs")} {
				if _, err := os.Lstat(p); err == nil {
					t.Fatalf("created %s through the link", p)
				}
			}
			os.RemoveAll(filepath.Join(elsewhere, "real.git"))
		})
	}
}

// TestMirrorBelongsToTheGitOwner: run as root on a repository uid 1000
// owns, the mirror's directories and what git writes in them belong to
// uid 1000, and a mirror directory someone else owns is refused.
func TestMirrorBelongsToTheGitOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	f := newFixture(t, base)
	if out, err := exec.Command("chown", "-R", "1000:1000", f.up, f.source).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	m := newMirror(t, f)
	m.Configure(f.upstream())
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{".git/intentfs", upstream.MirrorRel, upstream.MirrorRel + "/HEAD", upstream.MirrorRel + "/objects", upstream.MirrorRel + "/" + upstream.TrustedRef} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(f.source, rel), &st); err != nil || st.Uid != 1000 {
			t.Errorf("%s: uid %d %v, want 1000", rel, st.Uid, err)
		}
	}

	must(t, os.Mkdir(base+"/other", 0o755))
	g := newFixture(t, base+"/other")
	if out, err := exec.Command("chown", "-R", "1000:1000", g.up, g.source).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	must(t, os.Mkdir(filepath.Join(g.source, ".git", "intentfs"), 0o755)) // root's
	m2 := newMirror(t, g)
	m2.Configure(g.upstream())
	if err := m2.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "belongs to uid 0") {
		t.Fatalf("a root-owned mirror directory in uid 1000's .git: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamOfAnotherOwner: the human's upstream on a local path belongs
// to another user than the agent's clone, whose owner the fetch runs as;
// git's ownership check would refuse it ("dubious ownership") without the
// exemption the declared path gets.
func TestUpstreamOfAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	f := newFixture(t, base)
	if out, err := exec.Command("chown", "-R", "1000:1000", f.source).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	for _, u := range []string{f.up, "file://" + f.up} {
		m := newMirror(t, f)
		m.Configure(&policy.Upstream{URL: u, Ref: policy.DefaultUpstreamRef})
		if err := m.Refresh(context.Background()); err != nil {
			t.Fatalf("fetching root's upstream %s as uid 1000: %v", u, err)
		}
		if tip, err := m.Tip(context.Background(), 0); err != nil || tip.Commit == "" {
			t.Fatalf("tip of %s: %+v %v", u, tip, err)
		}
	}
}
