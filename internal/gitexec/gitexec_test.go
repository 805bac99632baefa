package gitexec_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
)

// TestRootRunsGitAsTheOwner: intentfs as root on a repository another user
// owns runs git as that user, so git has no more power than them and what
// it writes is theirs.
func TestRootRunsGitAsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	parent := t.TempDir()
	os.Chmod(filepath.Dir(parent), 0o755)
	os.Chmod(parent, 0o755)
	dir := filepath.Join(parent, "repo")
	gittest.Init(t, dir)
	gittest.Commit(t, dir, "base", map[string]string{"a": "a\n"})
	if out, err := exec.Command("chown", "-R", "1000:1000", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if repo.RunsAs() != 1000 {
		t.Fatalf("git runs as %d, want the owner 1000", repo.RunsAs())
	}
	ctx := context.Background()
	oid, err := repo.OutputInput(ctx, []byte("note\n"), "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(oid))
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, ".git", "objects", id[:2], id[2:]), &st); err != nil || st.Uid != 1000 {
		t.Fatalf("object written by git: uid %d, %v", st.Uid, err)
	}
}

func TestCommitsParsesAnyPath(t *testing.T) {
	dir := t.TempDir()
	gittest.Init(t, dir)
	base := gittest.Commit(t, dir, "base", map[string]string{"keep": "k\n"})
	names := []string{"\x01looks like a header", ":looks like a change", "new\nline", "sp ace", "ünï"}
	files := map[string]string{}
	for _, n := range names {
		files[n] = n
	}
	top := gittest.Commit(t, dir, "odd names", files)
	gittest.Git(t, dir, "rm", "-q", "keep")
	gittest.Git(t, dir, "commit", "-qm", "rm")
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []*gitexec.Commit
	err = repo.Commits(context.Background(), gitexec.Query{Revs: []string{base + "..HEAD"}}, func(c *gitexec.Commit) error {
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != top || len(got[0].Parents) != 1 || got[0].Parents[0] != base {
		t.Fatalf("commits: %+v", got)
	}
	seen := map[string]bool{}
	for _, ch := range got[0].Changes {
		if ch.Status != 'A' || ch.NewMode != "100644" || !gitexec.ZeroOID(ch.OldBlob) {
			t.Errorf("change %+v", ch)
		}
		seen[ch.Path] = true
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("path %q not parsed (got %v)", n, seen)
		}
	}
	if rm := got[1].Changes; len(rm) != 1 || rm[0].Status != 'D' || rm[0].Path != "keep" || !gitexec.ZeroOID(rm[0].NewBlob) {
		t.Fatalf("deletion: %+v", rm)
	}
	// A revision is never an option.
	err = repo.Commits(context.Background(), gitexec.Query{Revs: []string{"--output=" + filepath.Join(dir, "x")}}, func(*gitexec.Commit) error { return nil })
	if err == nil {
		t.Fatal("an option given as a revision was accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Fatal("git wrote --output")
	}
}

func TestBlobsHashAndRead(t *testing.T) {
	dir := t.TempDir()
	gittest.Init(t, dir)
	gittest.Commit(t, dir, "base", map[string]string{"a": "hello\n"})
	repo, _ := gitexec.Open(dir)
	ctx := context.Background()
	b, err := repo.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	oid := gittest.Git(t, dir, "rev-parse", "HEAD:a")
	tests := []struct {
		name, oid, want, err string
	}{
		{"blob", oid, "hello\n", ""},
		{"missing", strings.Repeat("1", 40), "", "missing"},
		{"revision expression", "HEAD:a", "", "not an object id"},
	}
	for _, tc := range tests {
		got, err := b.Read(tc.oid, 1<<20)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %q %v", tc.name, got, err)
		}
	}
	if h, err := b.Hash(oid); err != nil || h != gittest.Sha("hello\n") {
		t.Fatalf("hash %s %v", h, err)
	}
	// Reading past a too-large blob keeps the stream in step.
	if _, err := b.Read(oid, 2); err == nil {
		t.Fatal("a blob over the limit was read")
	}
	if got, err := b.Read(oid, 100); err != nil || string(got) != "hello\n" {
		t.Fatalf("after a skipped blob: %q %v", got, err)
	}
	// A missing object leaves the stream usable; a killed process does
	// not, and says so, for a caller that keeps Blobs to replace it.
	if b.Broken() {
		t.Fatal("Broken after a missing object and a skipped blob")
	}
	b.Kill()
	if _, err := b.Read(oid, 100); err == nil || !b.Broken() {
		t.Fatalf("a killed cat-file: err %v, Broken %v", err, b.Broken())
	}
}

// TestDeadlineEndsHelpersToo: a command whose helpers outlive git and hold
// its output open (an ssh, an upload-pack, here a shell alias's
// background sleep) returns at its deadline: the whole process group is
// killed, and the pipes are not waited for.
func TestDeadlineEndsHelpersToo(t *testing.T) {
	dir := t.TempDir()
	gittest.Init(t, dir)
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = repo.Output(ctx, "-c", "alias.hang=!sleep 30 & sleep 30", "hang")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("returned after %v (err %v), want soon after the 300ms deadline", took, err)
	}
	if err == nil {
		t.Fatal("no error for a command killed at its deadline")
	}
}
