package fence

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

// preImageRaceC races an open for writing against the unlink of the same
// file: one thread creates lib/r<pid>_<i>.go with unique content and
// removes it, another opens it O_RDWR in a loop and keeps the first
// descriptor it gets once the unlink has started. A descriptor whose
// inode still has one link after the unlink is the inode the daemon
// linked into the object store: the program writes over it, as an agent
// that wants its bytes restored by a later undo would, and counts a hit.
const preImageRaceC = `
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path[256];
static atomic_int phase; /* 0 idle, 1 file exists, 2 unlink started, 3 round over */
static atomic_int fdkept;

static void *opener(void *arg) {
	(void)arg;
	for (;;) {
		int p = atomic_load(&phase);
		if (p == 4) return NULL;
		if (p != 1 && p != 2) continue;
		int fd = open(path, O_RDWR);
		if (fd < 0) continue;
		if (atomic_load(&phase) == 2 || p == 2) {
			int none = -1;
			if (!atomic_compare_exchange_strong(&fdkept, &none, fd)) close(fd);
		} else {
			close(fd);
		}
	}
}

int main(int argc, char **argv) {
	int tries = atoi(argv[1]);
	int hits = 0;
	pthread_t t;
	atomic_store(&fdkept, -1);
	pthread_create(&t, NULL, opener, NULL);
	for (int i = 0; i < tries; i++) {
		snprintf(path, sizeof path, "lib/r%d_%d.go", (int)getpid(), i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) { perror(path); return 2; }
		dprintf(fd, "package lib // original %d %d\n", (int)getpid(), i);
		close(fd);
		atomic_store(&fdkept, -1);
		atomic_store(&phase, 1);
		usleep(200);
		atomic_store(&phase, 2);
		if (unlink(path) != 0) { perror("unlink"); return 2; }
		atomic_store(&phase, 3);
		int kept = atomic_exchange(&fdkept, -1);
		if (kept >= 0) {
			struct stat st;
			if (fstat(kept, &st) == 0 && st.st_nlink == 1) {
				ftruncate(kept, 0);
				pwrite(kept, "CORRUPTED-PREIMAGE\n", 19, 0);
				hits++;
			}
			close(kept);
		}
	}
	atomic_store(&phase, 4);
	pthread_join(t, NULL);
	printf("hits=%d\n", hits);
	return 0;
}
`

// TestPreImageRaceCannotCorruptUndo: an agent racing an open for writing
// against its own unlink never gets a writable descriptor on the bytes
// the daemon keeps for undo, so every object in the store matches its
// name and every deleted file's kept pre-image is its original content.
func TestPreImageRaceCannotCorruptUndo(t *testing.T) {
	testenv.Serial(t)
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("cc is needed to build the race program")
	}
	// Outside t.TempDir, whose parent only root may enter: uid 1000 runs it.
	dir, err := os.MkdirTemp("", "preimage-race")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "race")
	csrc := bin + ".c"
	if err := os.WriteFile(csrc, []byte(preImageRaceC), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, csrc).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-002", map[string]string{"lib/keep.go": "package lib\n"}, func(src string) {
		if err := os.Chown(filepath.Join(src, "lib"), 1000, 1000); err != nil {
			t.Fatal(err)
		}
	})
	const tries = 300
	out, err := e.ShAs(1000, 1000, bin+" "+strconv.Itoa(tries))
	if err != nil {
		t.Fatalf("race program: %v\n%s", err, out)
	}
	t.Logf("race program: %s", strings.TrimSpace(out))

	// Every unlink is recorded with the pre-image it kept.
	deletes := map[string]string{}
	ids := map[string]string{}
	testenv.WaitFor(t, func() bool {
		for _, r := range e.Records() {
			if g := r.Gov(); g.Event == ledger.EventDelete && strings.HasPrefix(r.Path(), "lib/r") {
				deletes[r.Path()] = ledger.Str(g.PreHash)
				ids[r.Path()] = r.ID
			}
		}
		return len(deletes) >= tries
	}, "a delete record for each of the race's files")

	store := objects.New(e.Src)
	var bad []string
	if err := store.Walk(func(o objects.Object) error {
		p, _ := store.Path(o.Hash)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if got, _, _, _ := ledger.ContentHash(strings.NewReader(string(b))); got != o.Hash {
			bad = append(bad, o.Hash+" holds "+strings.TrimSpace(string(b)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%d objects in the store do not match their names (the agent wrote a kept pre-image): %s", len(bad), strings.Join(bad[:min(3, len(bad))], "; "))
	}
	// What an undo of each delete would restore is the file's original
	// content.
	for path, hash := range deletes {
		b, err := store.Read(hash)
		if err != nil {
			t.Errorf("undo of the delete of %s: %v", path, err)
			continue
		}
		if !strings.HasPrefix(string(b), "package lib // original ") {
			t.Errorf("undo of the delete of %s would restore %q", path, b)
		}
	}

	if t.Failed() {
		return
	}

	// A revert of a delete restores the original; one whose kept bytes
	// were written after they were kept is refused, naming the object and
	// the record, and verify reports the object.
	ledgerPath := filepath.Join(e.Src, ledger.FileName)
	n := 0
	var victim string
	for path, id := range ids {
		if n == 3 {
			victim = path
			break
		}
		n++
		if _, _, err := history.Run(e.Src, ledgerPath, store, history.Request{Record: id, Force: true}, func(ledger.Change) {}); err != nil {
			t.Fatalf("revert of the delete of %s: %v", path, err)
		}
		if b, err := os.ReadFile(filepath.Join(e.Src, path)); err != nil || !strings.HasPrefix(string(b), "package lib // original ") {
			t.Fatalf("revert of the delete of %s restored %q, %v", path, b, err)
		}
	}
	p, _ := store.Path(deletes[victim])
	if err := os.WriteFile(p, []byte("CORRUPTED-PREIMAGE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = history.Run(e.Src, ledgerPath, store, history.Request{Record: ids[victim], Force: true}, func(ledger.Change) {})
	if err == nil || !strings.Contains(err.Error(), ids[victim]) || !strings.Contains(err.Error(), p) {
		t.Fatalf("revert from a corrupted object: %v; want a refusal naming %s and %s", err, p, ids[victim])
	}
	if _, err := os.Stat(filepath.Join(e.Src, victim)); err == nil {
		t.Fatalf("revert from a corrupted object restored %s", victim)
	}
	rep := ledger.Verify(ledger.VerifyOptions{Ledger: ledgerPath, ListObjects: store.List, CheckObject: store.Check})
	found := false
	for _, pr := range rep.Problems {
		found = found || pr.Kind == ledger.ProblemObject && strings.Contains(pr.Detail, deletes[victim])
	}
	if !found {
		t.Fatalf("verify does not report the corrupted object %s: %v", deletes[victim], rep.Problems)
	}
}
