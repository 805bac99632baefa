package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSourceChangesShowThroughTheMount: the kernel caches attributes,
// entries and directory listings for a second; a change made directly in
// the source must show in the mount once that second has passed, and one
// made through the mount at once.
func TestSourceChangesShowThroughTheMount(t *testing.T) {
	// Serial: asserts latencies close to the kernel's one-second cache timeout.
	testenv.Serial(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", map[string]string{"dir/a.txt": "a\n"})
	list := func() string {
		entries, err := os.ReadDir(filepath.Join(e.Mnt, "dir"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range entries {
			names = append(names, d.Name())
		}
		return strings.Join(names, " ")
	}
	if got := list(); got != "a.txt" {
		t.Fatalf("listing %q", got)
	}
	// Through the mount: visible at once.
	e.MustSh("echo b > dir/b.txt")
	if got := list(); got != "a.txt b.txt" {
		t.Fatalf("after a create through the mount: %q", got)
	}
	// Behind the mount's back: visible within the cache timeout.
	testenv.WriteFile(t, filepath.Join(e.Src, "dir/c.txt"), "c\n")
	os.Remove(filepath.Join(e.Src, "dir/a.txt"))
	start := time.Now()
	for list() != "b.txt c.txt" {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("source changes not visible after 3s: %q", list())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("source changes visible after %v", time.Since(start).Round(time.Millisecond))

	// "No such file" is cached too: a probe that missed must not hide a
	// file created through the mount, nor, beyond the timeout, one
	// created in the source.
	for _, name := range []string{"dir/d.txt", "dir/e.txt"} {
		if _, err := os.Stat(filepath.Join(e.Mnt, name)); !os.IsNotExist(err) {
			t.Fatalf("%s before it exists: %v", name, err)
		}
	}
	e.MustSh("echo d > dir/d.txt")
	if _, err := os.Stat(filepath.Join(e.Mnt, "dir/d.txt")); err != nil {
		t.Fatalf("created through the mount after a missed probe: %v", err)
	}
	testenv.WriteFile(t, filepath.Join(e.Src, "dir/e.txt"), "e\n")
	start = time.Now()
	for {
		if _, err := os.Stat(filepath.Join(e.Mnt, "dir/e.txt")); err == nil {
			break
		}
		if time.Since(start) > 3*time.Second {
			t.Fatal("a file created in the source after a missed probe is not visible after 3s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
