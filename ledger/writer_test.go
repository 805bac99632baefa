package ledger

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger/ledgertest"
)

func openTestWriter(t *testing.T, path string, rev func() string) *Writer {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(f, rev, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWriterConcurrentAppendsAreWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w := openTestWriter(t, path, func() string { return "0123456789abcdef0123456789abcdef01234567" })
	var wg sync.WaitGroup
	const writers, each = 8, 250
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				w.Append(NewRecord(Change{Event: EventCreate, Path: fmt.Sprintf("f%d-%d", i, j), Intent: "INT-001"}, "t"))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := ledgertest.ValidateFile(t, path)
	if len(lines) != writers*each {
		t.Fatalf("lines = %d, want %d", len(lines), writers*each)
	}
	seen := map[string]bool{}
	err := Scan(path, func(_ int, r *Record) error {
		if r.VCS == nil || r.VCS.Type != "git" || len(r.VCS.Revision) != 40 {
			t.Errorf("vcs = %+v", r.VCS)
		}
		seen[r.Path()] = true
		return nil
	})
	if err != nil || len(seen) != writers*each {
		t.Fatalf("scan: %v, distinct paths %d", err, len(seen))
	}
	if st := w.Stats(); st.Appended != writers*each || st.Commits == 0 || st.Commits > writers*each {
		t.Errorf("stats = %+v", st)
	}
}

func TestWriterCommitsWithinDelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w := openTestWriter(t, path, nil)
	defer w.Close()
	w.Append(NewRecord(Change{Event: EventMkdir, Path: "d", Intent: "INT-001"}, "t"))
	deadline := time.Now().Add(2 * MaxCommitDelay)
	for {
		if st := w.Stats(); st.Commits >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("record not committed within %v", 2*MaxCommitDelay)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b, _ := os.ReadFile(path); len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("ledger after commit = %q", b)
	}
}

func TestWriterStartsOnFreshLineAfterTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(`{"torn":`), 0o644); err != nil {
		t.Fatal(err)
	}
	w := openTestWriter(t, path, nil)
	w.Append(NewRecord(Change{Event: EventMkdir, Path: "d"}, "t"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b[:9]) != "{\"torn\":\n" {
		t.Fatalf("torn tail was not kept on its own line: %q", b)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w := openTestWriter(t, path, nil)
	for i := range 10 {
		w.Append(NewRecord(Change{Event: EventCreate, Path: fmt.Sprint(i)}, "t"))
	}
	w.Close()
	tests := []struct {
		n    int
		keep func(*Record) bool
		want []string
	}{
		{3, nil, []string{"7", "8", "9"}},
		{20, func(r *Record) bool { return r.Path() < "2" }, []string{"0", "1"}},
		{0, nil, nil},
	}
	for _, tt := range tests {
		got, err := Tail(path, tt.n, tt.keep)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, r := range got {
			paths = append(paths, r.Path())
		}
		if fmt.Sprint(paths) != fmt.Sprint(tt.want) {
			t.Errorf("Tail(%d) = %v, want %v", tt.n, paths, tt.want)
		}
	}
}

func TestGitHead(t *testing.T) {
	dir := t.TempDir()
	g := NewGitHead(dir)
	if rev := g.Revision(); rev != "" {
		t.Fatalf("no repo: %q", rev)
	}
	must := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(".git/HEAD", "ref: refs/heads/main\n")
	if rev := g.Revision(); rev != "" {
		t.Fatalf("unborn branch: %q", rev)
	}
	must(".git/packed-refs", "# pack-refs\naaaa refs/heads/main\n")
	if rev := g.Revision(); rev != "aaaa" {
		t.Fatalf("packed: %q", rev)
	}
	must(".git/refs/heads/main", "bbbb\n")
	if rev := g.Revision(); rev != "bbbb" {
		t.Fatalf("loose: %q", rev)
	}
	must(".git/HEAD", "cccc\n")
	if rev := g.Revision(); rev != "cccc" {
		t.Fatalf("detached: %q", rev)
	}
}
