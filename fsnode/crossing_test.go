package fsnode

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// crossTree makes files (path: content) below a fresh directory and
// returns it open, for listCrossing.
func crossTree(t *testing.T, files map[string]string) int {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") { // a directory
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// TestListCrossing: a move across the edge of the governed tree takes
// along every governed entry below it, listed as rm -rf removes them
// (what a directory holds before the directory), with the bytes of each
// file; entries exempt on the governed side are left out with all they
// hold.
func TestListCrossing(t *testing.T) {
	fd := crossTree(t, map[string]string{
		"bulk/a.txt":         "alpha",
		"bulk/sub/c.txt":     "charlie!",
		"bulk/out.log":       "exempt",
		"bulk/gen/x":         "exempt below an exempt directory",
		"single":             "12345",
		"bulk/sub/deeper/d/": "",
	})
	governed := func(rel string, isDir bool) bool {
		return !strings.HasSuffix(rel, ".log") && !(isDir && strings.HasSuffix(rel, "/gen"))
	}
	t.Run("directory", func(t *testing.T) {
		entries, bytes, err := listCrossing(fd, "bulk", "src/bulk", "build/bulk", governed)
		if err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		for i, e := range entries {
			pos[e.rel] = i
			if want := "build/" + strings.TrimPrefix(e.rel, "src/"); e.other != want {
				t.Errorf("%s: other side %s, want %s", e.rel, e.other, want)
			}
		}
		for _, want := range []string{"src/bulk", "src/bulk/a.txt", "src/bulk/sub", "src/bulk/sub/c.txt", "src/bulk/sub/deeper", "src/bulk/sub/deeper/d"} {
			if _, ok := pos[want]; !ok {
				t.Errorf("%s not listed: %+v", want, entries)
			}
		}
		for _, exempt := range []string{"src/bulk/out.log", "src/bulk/gen", "src/bulk/gen/x"} {
			if _, ok := pos[exempt]; ok {
				t.Errorf("exempt %s listed", exempt)
			}
		}
		if len(entries) != 6 {
			t.Errorf("%d entries, want 6: %+v", len(entries), entries)
		}
		for child, parent := range map[string]string{"src/bulk/a.txt": "src/bulk", "src/bulk/sub/c.txt": "src/bulk/sub", "src/bulk/sub": "src/bulk", "src/bulk/sub/deeper/d": "src/bulk/sub/deeper"} {
			if pos[child] > pos[parent] {
				t.Errorf("%s listed after its directory %s", child, parent)
			}
		}
		if bytes != int64(len("alpha")+len("charlie!")) {
			t.Errorf("bytes = %d, want the governed files' %d", bytes, len("alpha")+len("charlie!"))
		}
		rm := removals(entries)
		if rm[pos["src/bulk/sub/c.txt"]].Size != 8 || !rm[pos["src/bulk/sub"]].IsDir {
			t.Errorf("removals = %+v", rm)
		}
	})
	t.Run("file", func(t *testing.T) {
		entries, bytes, err := listCrossing(fd, "single", "src/single", "build/single", governed)
		if err != nil || len(entries) != 1 || entries[0].isDir || entries[0].at != "single" || bytes != 5 {
			t.Fatalf("entries %+v, bytes %d, err %v", entries, bytes, err)
		}
	})
}

// TestListCrossingIsBounded: a tree of more governed entries or bytes
// than one move may record is refused, with a reason naming the bound.
func TestListCrossingIsBounded(t *testing.T) {
	all := func(string, bool) bool { return true }
	many := map[string]string{}
	for i := range maxCrossingEntries + 1 {
		many["many/f"+strconv.Itoa(i)] = ""
	}
	fd := crossTree(t, many)
	big := filepath.Join(t.TempDir(), "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	// A sparse file: its size is what counts, nothing is read.
	f, err := os.Create(filepath.Join(big, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxCrossingBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bigFd, err := syscall.Open(filepath.Dir(big), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(bigFd)
	cases := []struct {
		name, limit string
		dirfd       int
		entry       string
	}{
		{"too many entries", "more than 1000 governed files and directories", fd, "many"},
		{"too many bytes", "more than 256 MiB of governed content", bigFd, "big"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := listCrossing(c.dirfd, c.entry, "src/"+c.entry, "build/"+c.entry, all)
			var big *crossingTooLarge
			if !errors.As(err, &big) {
				t.Fatalf("err = %v, want crossingTooLarge", err)
			}
			reason := crossingRefusal(true, "src/"+c.entry, "build/"+c.entry, err)
			if !strings.Contains(reason, c.limit) || !strings.Contains(reason, "smaller parts") || !strings.Contains(reason, "build/"+c.entry) {
				t.Fatalf("reason %q does not name the limit %q and the way out", reason, c.limit)
			}
		})
	}
}
