package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// TestWatchedSourceCachesLongAndStaysFresh: with the source watched, the
// kernel keeps entries and attributes past go-fuse's default one-second
// timeout (no LOOKUP or GETATTR for a file it knows), and still shows each kind
// of change made directly in the source, or by intentfs's own ledger,
// within moments: with an hour's timeout, only the watcher can make
// these pass.
func TestWatchedSourceCachesLongAndStaysFresh(t *testing.T) {
	// Serial: counts the kernel's requests over a timed window, which a loaded machine stretches.
	testenv.Serial(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", map[string]string{
		"dir/a.txt": "a\n", "dir/gone.txt": "x\n", "dir/mode.txt": "m\n", "old/f.txt": "f\n"})
	if st := e.D.Status(); !st.SourceWatched || st.CacheSeconds != 3600 {
		t.Fatalf("status: source_watched %v, cache_timeout_seconds %v; want a watched source cached for an hour", st.SourceWatched, st.CacheSeconds)
	}
	mnt := func(p string) string { return filepath.Join(e.Mnt, p) }
	src := func(p string) string { return filepath.Join(e.Src, p) }
	stat := func(p string) (os.FileInfo, error) { return os.Lstat(mnt(p)) }
	for _, p := range []string{"dir/a.txt", "dir/gone.txt", "dir/mode.txt", "old/f.txt"} {
		if _, err := stat(p); err != nil {
			t.Fatal(err)
		}
	}

	// Cached for long: past a one-second timeout, no request at all. (The
	// sleep is the point: it outlasts what a default timeout keeps.)
	before := e.Lookups()
	time.Sleep(1200 * time.Millisecond)
	for _, p := range []string{"dir/a.txt", "dir/gone.txt", "dir/mode.txt", "old/f.txt"} {
		if _, err := stat(p); err != nil {
			t.Fatal(err)
		}
	}
	// At most one request: the mount point's own attributes, which the
	// kernel keeps for a second (see fsnode.rootAttrTimeout).
	if got := e.Lookups() - before; got > 1 {
		t.Fatalf("the kernel asked again %d times for entries it knew 1.2s ago: the cache is not long", got)
	}

	// Content through the mount: passthrough reads reach the source
	// whatever the kernel caches, and a read makes the kernel ask for
	// attributes again; so what is polled is the cached size alone, and
	// the content is read once it is right.
	holds := func(p, want string) bool {
		if fi, err := stat(p); err != nil || fi.Size() != int64(len(want)) {
			return false
		}
		b, err := os.ReadFile(mnt(p))
		if err != nil || string(b) != want {
			t.Fatalf("%s holds %q (%v) through the mount, want %q", p, b, err, want)
		}
		return true
	}
	within := func(what string, cond func() bool) {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > 3*time.Second {
				t.Fatalf("%s: not visible through the mount after 3s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: visible after %v", what, time.Since(start).Round(time.Millisecond))
	}
	// Content and size.
	if err := os.WriteFile(src("dir/a.txt"), []byte("changed in the source\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	within("a write in the source", func() bool { return holds("dir/a.txt", "changed in the source\n") })
	// Attributes.
	if err := os.Chmod(src("dir/mode.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	within("a chmod in the source", func() bool {
		fi, err := stat("dir/mode.txt")
		return err == nil && fi.Mode().Perm() == 0o600
	})
	// A removal.
	if err := os.Remove(src("dir/gone.txt")); err != nil {
		t.Fatal(err)
	}
	within("a removal in the source", func() bool {
		_, err := stat("dir/gone.txt")
		return os.IsNotExist(err)
	})
	// A directory moved: the new name shows, the old one goes, and a
	// file created in it afterwards shows too.
	if err := os.Rename(src("old"), src("new")); err != nil {
		t.Fatal(err)
	}
	within("a directory moved in the source", func() bool {
		_, errOld := stat("old/f.txt")
		_, errNew := stat("new/f.txt")
		return os.IsNotExist(errOld) && errNew == nil
	})
	testenv.WriteFile(t, src("new/g.txt"), "g\n")
	within("a file created in a moved directory", func() bool {
		_, err := stat("new/g.txt")
		return err == nil
	})
	// A file replaced by another under the same name (what an editor or
	// a revert does): the new inode and content.
	testenv.WriteFile(t, src("dir/tmp"), "replaced\n")
	if err := os.Rename(src("dir/tmp"), src("dir/a.txt")); err != nil {
		t.Fatal(err)
	}
	within("a file replaced in the source", func() bool { return holds("dir/a.txt", "replaced\n") })

	// A hard-linked file written under a name the kernel never met: the
	// mount's inode for it (known by its other name) is invalidated.
	if err := os.MkdirAll(src("links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(src("dir/mode.txt"), src("links/other")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src("links/other"), []byte("through another link\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	within("a write through another hard link", func() bool { return holds("dir/mode.txt", "through another link\n") })

	// intentfs's own writes in the source: the ledger grows with each
	// recorded change, and its size through the mount follows.
	ledgerRel := ledger.FileName
	fi, err := stat(ledgerRel)
	if err != nil {
		t.Fatal(err)
	}
	e.MustSh("echo more >> dir/a.txt")
	// The write is recorded at RELEASE, which the kernel sends after
	// close(2) has returned to the shell: wait for the record.
	e.WaitRecord("the write through the mount", testenv.Event(ledger.EventWrite, "dir/a.txt"))
	if err := e.D.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	var want syscall.Stat_t
	if err := syscall.Stat(src(ledgerRel), &want); err != nil {
		t.Fatal(err)
	}
	if want.Size == fi.Size() {
		t.Fatal("the change through the mount left no record")
	}
	within("the ledger's growth", func() bool {
		fi, err := stat(ledgerRel)
		return err == nil && fi.Size() == want.Size
	})
}

// TestControlFilesAreNeverCachedStale: a control file's size follows
// its content at once, whatever the mount's attribute timeout: the
// denials file is empty, a denial adds a line, and stat says so.
func TestControlFilesAreNeverCachedStale(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", map[string]string{"README.md": "r\n"})
	denials := filepath.Join(e.Mnt, ".intentfs", "denials")
	size := func() int64 {
		fi, err := os.Stat(denials)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if got := size(); got != 0 {
		t.Fatalf("denials: %d bytes before any denial", got)
	}
	e.MustDeny("echo x > README.md")
	// Stat before reading: a read would make the kernel ask again anyway
	// (it invalidates the atime it knows).
	got := size()
	b, err := os.ReadFile(denials)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatal("the denial is not in .intentfs/denials")
	}
	if got != int64(len(b)) {
		t.Fatalf("denials: stat said %d bytes right after a denial, the file holds %d", got, len(b))
	}
}
