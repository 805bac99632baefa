package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/ledger"
)

// blameOwners is `intentfs blame --json` of rel in the source, as
// "text:owner" per line: the intent of the line's record, or "-" for a
// line no record explains (the human's, before the ledger).
func blameOwners(t *testing.T, c *testenv.CLI, src, rel string) []string {
	t.Helper()
	var lines []history.BlameLine
	out := c.Must("blame", "--source", src, "--json", rel)
	if err := json.Unmarshal([]byte(out), &lines); err != nil {
		t.Fatalf("blame --json %s: %v\n%s", rel, err, out)
	}
	var got []string
	for _, l := range lines {
		who := l.Intent
		if l.Record == "" {
			who = "-"
		}
		got = append(got, l.Text+":"+who)
	}
	return got
}

// wantBlame fails the test unless rel's blame becomes want: the mount
// records a change at RELEASE, after the writer's close has returned.
func wantBlame(t *testing.T, c *testenv.CLI, src, rel, after string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := blameOwners(t, c, src, rel)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("blame %s after %s\n got %q\nwant %q\n%s\nlog:\n%s", rel, after, got, want, c.Must("blame", "--source", src, rel), c.Must("log", "--source", src))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBlameKeepsTheHumansLinesThroughInPlaceSaves: an editor that
// truncates the file and writes it whole (vim's backupcopy=yes, Python's
// open("w")) changes only the lines it changed; the lines it rewrote
// unchanged stay the human's.
func TestBlameKeepsTheHumansLinesThroughInPlaceSaves(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, _ := testenv.GateRepo(t)
	src, mnt := e.Src, e.Mnt
	// Python's open("w") and a write of the whole content.
	testenv.GitAs(t, mnt, `python3 -c '
p = "src/util.go"
s = open(p).read()
with open(p, "w") as f:
    f.write(s.replace("func util() {}", "func util() { x() }"))
'`)
	wantBlame(t, c, src, "src/util.go", "python's open(w)", "package api:-", ":-", "func util() { x() }:INT-001")
	// Then an ftruncate and a rewrite through one descriptor. It starts
	// once the first save's record is made: a truncate while another
	// handle is still open on the file (the kernel sends RELEASE after
	// close returns) is recorded on its own (docs/blame.md).
	testenv.GitAs(t, mnt, `python3 -c '
import os
p = "src/util.go"
fd = os.open(p, os.O_RDWR)
b = os.read(fd, 1 << 20)
os.ftruncate(fd, 0)
os.pwrite(fd, b + b"// second\n", 0)
os.close(fd)
'`)
	python := []string{"package api:-", ":-", "func util() { x() }:INT-001", "// second:INT-001"}
	wantBlame(t, c, src, "src/util.go", "python's rewrites", python...)

	// vim with backupcopy=yes: open, ftruncate, write, fchmod, close.
	vim, err := exec.LookPath("vim.tiny")
	if err != nil {
		if vim, err = exec.LookPath("vim"); err != nil {
			testenv.SkipOrFail(t, "vim is not installed (apt-get install -y vim-tiny)")
		}
	}
	testenv.GitAs(t, mnt, vim+` -u NONE -i NONE -es -c 'set backupcopy=yes' -c '$put =\"// agent line\"' -c wq src/util.go`)
	if got := testenv.GitAs(t, src, "tail -n1 src/util.go"); got != "// agent line" {
		t.Fatalf("vim did not save: %q", got)
	}
	e.WaitRecord("vim's save", func(r *ledger.Record) bool {
		return r.Path() == "src/util.go" && r.Gov().Process != nil && strings.HasPrefix(r.Gov().Process.Comm, "vim")
	})
	wantBlame(t, c, src, "src/util.go", "vim's in-place save", append(python, "// agent line:INT-001")...)
	t.Logf("intentfs blame src/util.go after vim's save:\n%s", c.Must("blame", "--source", src, "src/util.go"))
}
