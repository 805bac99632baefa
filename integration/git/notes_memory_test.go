package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	testenv.Parallel(t)
	c := testenv.NewCLI(t)
	repo := filepath.Join(c.Dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".orchestration"), 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(repo, policy.IntentsFile), testenv.NotesPolicy)
	testenv.WriteFile(t, filepath.Join(repo, "README.md"), "# project\n")
	var note strings.Builder
	for i := range hostileNoteRecords {
		fmt.Fprintf(&note, `{"id":"r%07d"}`+"\n", i)
	}
	testenv.WriteFile(t, filepath.Join(c.Dir, "note"), note.String())
	for _, d := range []string{filepath.Dir(c.Dir), c.Dir} {
		os.Chmod(d, 0o755)
	}
	testenv.ChownTree(t, c.Dir)
	testenv.GitAs(t, repo, "git init -q -b main . && git add -A && git commit -qm base && echo more >> README.md && git commit -qam more && git notes --ref=intentfs add -f -F ../note HEAD")

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
// memory in bytes, as GNU time reports it. The child's own rusage cannot
// be used: Go starts children with vfork, and exec records the parent's
// peak (this test process, with every parallel test's mounts) as the
// child's.
func runMeasured(t *testing.T, c *testenv.CLI, args ...string) (string, int64) {
	t.Helper()
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		testenv.SkipOrFail(t, "GNU time (/usr/bin/time, Debian's time package) measures the peak memory: %v", err)
	}
	report := filepath.Join(t.TempDir(), "rss")
	cmd := exec.Command(timeBin, append([]string{"-f", "%M", "-o", report, c.Bin}, args...)...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running intentfs %v: %v", args, err)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the peak memory of intentfs %v: %v", args, err)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		t.Fatalf("the peak memory of intentfs %v: %q", args, b)
	}
	kib, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
	if err != nil {
		t.Fatalf("the peak memory of intentfs %v: %q", args, b)
	}
	return string(out), kib << 10
}
