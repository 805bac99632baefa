package procinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHoldersNamesAProcessWorkingInTheDirectory: a process whose working
// directory or open file lies below the directory is listed with how it
// holds it; one working elsewhere is not.
func TestHoldersNamesAProcessWorkingInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "held.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(cwd, script string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = cwd
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	inside := start(sub, "exec sleep 30")
	opener := start(t.TempDir(), "exec sleep 30 < "+filepath.Join(dir, "held.txt"))
	outside := start(t.TempDir(), "exec sleep 30")

	want := map[int]string{inside.Process.Pid: "working directory " + sub, opener.Process.Pid: "open file " + filepath.Join(dir, "held.txt") + " (fd 0)"}
	deadline := time.Now().Add(5 * time.Second)
	for {
		scan := Holders(dir)
		got := map[int]string{}
		for _, h := range scan.Holders {
			got[h.Pid] = strings.Join(h.Uses, "; ")
			if h.Pid == outside.Process.Pid {
				t.Fatalf("a process working elsewhere is listed: %+v", h)
			}
		}
		ok := true
		for pid, use := range want {
			ok = ok && got[pid] == use
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("holders %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
