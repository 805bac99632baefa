package policyedit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/policy"
)

func TestUpdateFileConcurrentWritersLoseNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "active_intents.yaml")
	os.WriteFile(path, []byte("active_intents:\n  - id: INT-001\n    name: shared\n    status: IN_PROGRESS\n    owned_scope:\n      - \"base/**\"\n"), 0o640)
	var wg sync.WaitGroup
	const n = 8
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := UpdateFile(path, func(data []byte) ([]byte, error) {
				return ApplyChange(path, data, IntentChange{ID: "INT-001", AddScope: []string{fmt.Sprintf("w%d/**", i)}})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	in, _, err := policy.LoadIntents(path)
	if err != nil {
		t.Fatal(err)
	}
	got := in.Get("INT-001")
	if len(got.OwnedScope) != n+1 || got.Version != n+1 {
		t.Fatalf("scope %v version %d: a concurrent edit was lost", got.OwnedScope, got.Version)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v not kept", st.Mode())
	}
}

func TestUpdateFileReappliesOverAHumanEdit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "active_intents.yaml")
	orig := "active_intents:\n  - id: INT-001\n    name: first\n    status: PENDING\n    owned_scope: [\"a/**\"]\n"
	os.WriteFile(path, []byte(orig), 0o644)
	calls := 0
	err := UpdateFile(path, func(data []byte) ([]byte, error) {
		calls++
		if calls == 1 {
			// A human saves an edit while intentfs is working.
			os.WriteFile(path, []byte(strings.Replace(orig, "name: first", "name: renamed by a human", 1)), 0o644)
		}
		return ApplyChange(path, data, IntentChange{ID: "INT-001", Status: policy.StatusInProgress})
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "renamed by a human") || !strings.Contains(string(b), "IN_PROGRESS") || calls != 2 {
		t.Fatalf("calls %d, file:\n%s", calls, b)
	}
}

// TestUpdateFileWaitsForALockBoundedly: a writer that holds the policy's
// lock (here another open file of this process) delays an update by at
// most the wait, and the error names the holder; once it lets go, the
// update goes through.
func TestUpdateFileWaitsForALockBoundedly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "active_intents.yaml")
	os.WriteFile(path, []byte("active_intents: []\n"), 0o644)
	holder, err := os.OpenFile(filepath.Join(dir, ".active_intents.yaml.lock"), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	appendLine := func(data []byte) ([]byte, error) { return append(data, "# edited\n"...), nil }
	start := time.Now()
	err = updateFile(path, appendLine, 300*time.Millisecond)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("update under a held lock: %v, want ErrLocked", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("update waited %v", took)
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the holder (%s)", err, want)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "edited") {
		t.Fatal("the policy changed without the lock")
	}
	holder.Close()
	if err := updateFile(path, appendLine, 300*time.Millisecond); err != nil {
		t.Fatalf("update after the holder let go: %v", err)
	}
}

// TestUpdateFileKeepsTheOwner: a daemon running as root rewrites a policy
// a user owns; the user must still own (and be able to edit) it.
func TestUpdateFileKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own a file as another user")
	}
	path := filepath.Join(t.TempDir(), "active_intents.yaml")
	os.WriteFile(path, []byte("active_intents:\n  - id: INT-001\n    name: owned\n    status: IN_PROGRESS\n    owned_scope: [\"a/**\"]\n"), 0o600)
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	err := UpdateFile(path, func(data []byte) ([]byte, error) {
		return ApplyChange(path, data, IntentChange{ID: "INT-001", AddScope: []string{"b/**"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid != 1000 || sys.Gid != 1000 || st.Mode().Perm() != 0o600 {
		t.Fatalf("after the edit the policy is %d:%d %v, want 1000:1000 -rw-------", sys.Uid, sys.Gid, st.Mode().Perm())
	}
}
