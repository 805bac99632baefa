package fence

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestDirectoriesOpenWithoutRoundTrips checks that directories are listed,
// synced and queried through handles the daemon holds per request: the
// kernel sends one OPENDIR (declined) and no RELEASEDIR, and every tool
// still sees the right entries.
func TestDirectoriesOpenWithoutRoundTrips(t *testing.T) {
	testenv.Parallel(t)
	seed := map[string]string{}
	for i := range 300 { // more than one READDIRPLUS reply holds
		seed[filepath.Join("many", "file-with-a-long-name-"+strconv.Itoa(i)+".txt")] = "x\n"
	}
	seed["a/b/c.txt"] = "c\n"
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", seed)

	for _, dir := range []string{"many", "a", "a/b"} {
		want := names(t, filepath.Join(e.Src, dir))
		for range 3 { // the first fills the kernel's cache, the rest use it
			if got := names(t, filepath.Join(e.Mnt, dir)); got != want {
				t.Fatalf("listing %s: got %d names, want %d", dir, strings.Count(got, " ")+1, strings.Count(want, " ")+1)
			}
		}
	}
	if out := e.MustSh("find a | sort"); out != "a\na/b\na/b/c.txt\n" {
		t.Fatalf("find: %q", out)
	}

	// fsync(2) of a directory reaches the source rather than being dropped.
	d, err := os.Open(filepath.Join(e.Mnt, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync of a directory: %v", err)
	}
	d.Close()

	// An ioctl on a directory gets the answer the source gives.
	if _, err := exec.LookPath("lsattr"); err == nil {
		_, srcErr := exec.Command("lsattr", "-d", filepath.Join(e.Src, "a")).CombinedOutput()
		_, mntErr := exec.Command("lsattr", "-d", filepath.Join(e.Mnt, "a")).CombinedOutput()
		if (srcErr == nil) != (mntErr == nil) {
			t.Fatalf("lsattr -d: source err %v, mount err %v", srcErr, mntErr)
		}
	}

	ops := e.D.Status().Ops
	if ops["OPENDIR"] > 1 || ops["RELEASEDIR"] != 0 {
		t.Fatalf("directory opens cost round trips: %v", ops)
	}
	if ops["READDIRPLUS"]+ops["READDIR"] == 0 {
		t.Fatalf("no directory was read through the daemon: %v", ops)
	}
}

// names lists dir, sorted, joined by spaces.
func names(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
