package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

// hostileNoteRecords is the planted note's size: 2,000,000 in the attack
// that took the root daemon to 2 GB, scaled down for the suite's time.
const hostileNoteRecords = 200_000

// maxNotesReaderRSS bounds the peak memory of a command reading notes
// that a cap leaves out: a fresh intentfs process is about 20 MB.
const maxNotesReaderRSS = 100 << 20

// TestFenceHostileNoteMemory: the agent plants one note of 200,000 tiny
// records. The notes sync (the daemon's after every commit, and intentfs
// notes sync), verify --notes and check stream within a memory bound:
// the note is over the per-note cap, skipped, and named with the cap and
// how to raise it.
func TestFenceHostileNoteMemory(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	repo := filepath.Join(c.dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".orchestration"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, policy.IntentsFile), notesPolicy)
	writeFile(t, filepath.Join(repo, "README.md"), "# project\n")
	var note strings.Builder
	for i := range hostileNoteRecords {
		fmt.Fprintf(&note, `{"id":"r%07d"}`+"\n", i)
	}
	writeFile(t, filepath.Join(c.dir, "note"), note.String())
	for _, d := range []string{filepath.Dir(c.dir), c.dir} {
		os.Chmod(d, 0o755)
	}
	chownTree(t, c.dir)
	gitAs(t, repo, "git init -q -b main . && git add -A && git commit -qm base && echo more >> README.md && git commit -qam more && git notes --ref=intentfs add -f -F ../note HEAD")

	for _, args := range [][]string{
		{"notes", "sync", "--source", repo},
		{"verify", "--notes", "--source", repo},
		{"check", "--source", repo, "HEAD~1..HEAD"},
	} {
		out, rss := runMeasured(t, c, args...)
		t.Logf("intentfs %s: peak RSS %d MiB\n%s", strings.Join(args, " "), rss>>20, out)
		if rss > maxNotesReaderRSS {
			t.Errorf("intentfs %s peaked at %d MiB reading a planted note of %d records, over %d MiB", strings.Join(args, " "), rss>>20, hostileNoteRecords, maxNotesReaderRSS>>20)
		}
		if args[0] != "notes" && !strings.Contains(out, "INTENTFS_NOTES_MAX_NOTE_RECORDS") {
			t.Errorf("intentfs %s does not name the cap that left the note out:\n%s", strings.Join(args, " "), out)
		}
	}
}

// runMeasured runs the CLI and returns its output and its peak resident
// memory in bytes (getrusage of the child).
func runMeasured(t *testing.T, c *cli, args ...string) (string, int64) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.runtime)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running intentfs %v: %v", args, err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	return string(out), ru.Maxrss << 10
}
