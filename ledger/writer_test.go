package ledger

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger/ledgertest"
)

func openTestWriter(t *testing.T, path string, rev func() string) *Writer {
	t.Helper()
	w, err := OpenWriter(path, WriterOptions{Rev: rev, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Source: "/src", Version: "t"})
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
	if len(lines) != writers*each+1 {
		t.Fatalf("lines = %d, want %d and a header", len(lines), writers*each)
	}
	seen := map[string]bool{}
	err := Scan(path, func(_ int, r *Record) error {
		if r.Gov().Event == EventHeader {
			return nil
		}
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

func TestTornTailIsMovedAsideAndTheChainContinues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w := openTestWriter(t, path, nil)
	for i := range 3 {
		w.Append(NewRecord(Change{Event: EventCreate, Path: fmt.Sprint(i)}, "t"))
	}
	w.Close()
	before, _ := os.ReadFile(path)
	// A crash in the middle of writing the next line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"version":"0.1.0","id":"half`)
	f.Close()

	w = openTestWriter(t, path, nil)
	w.Append(NewRecord(Change{Event: EventCreate, Path: "after"}, "t"))
	w.Close()
	after, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(after), string(before)) {
		t.Fatal("an earlier line was changed")
	}
	torn, _ := os.ReadFile(path + ".torn")
	if string(torn) != `{"version":"0.1.0","id":"half`+"\n" {
		t.Fatalf("torn side file = %q", torn)
	}
	ledgertest.ValidateFile(t, path)
	var events []Event
	Scan(path, func(_ int, r *Record) error { events = append(events, r.Gov().Event); return nil })
	if fmt.Sprint(events) != "[header create create create torn create]" {
		t.Fatalf("events %v", events)
	}
	if rep := Verify(VerifyOptions{Ledger: path}); !rep.ChainOK() {
		t.Fatalf("chain broken after recovery: %+v", rep.Problems)
	}
}

func TestRotationContinuesTheChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.jsonl")
	w, err := OpenWriter(path, WriterOptions{MaxBytes: 4096, Source: "/s", Version: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		w.Append(NewRecord(Change{Event: EventCreate, Path: fmt.Sprintf("file-%03d", i), Intent: "INT-001"}, "t"))
		if i%10 == 0 {
			w.Flush()
		}
	}
	w.Close()
	files, err := Files(path)
	if err != nil || len(files) < 3 || files[len(files)-1] != path || !strings.HasSuffix(files[0], "agent_trace.1.jsonl") {
		t.Fatalf("files %v %v", files, err)
	}
	n := 0
	Scan(path, func(_ int, r *Record) error {
		if r.Gov().Event == EventCreate {
			n++
		}
		return nil
	})
	if n != 100 {
		t.Fatalf("%d records across rotated files, want 100", n)
	}
	for _, f := range files {
		if st, _ := os.Stat(f); st.Size() > 4096+2048 {
			t.Errorf("%s is %d bytes", f, st.Size())
		}
		ledgertest.ValidateFile(t, f)
	}
	if rep := Verify(VerifyOptions{Ledger: path}); !rep.ChainOK() || rep.Records != 100+len(files) {
		t.Fatalf("verify: %d records, problems %+v", rep.Records, rep.Problems)
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
		keep := func(r *Record) bool { return r.Gov().Event != EventHeader && (tt.keep == nil || tt.keep(r)) }
		got, err := Tail(path, tt.n, keep)
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

// TestWriterCommittedSeesEveryRecordOnDiskInOrder: the Committed hook
// (what the audit-stream exporter subscribes to) gets each record,
// header included, in the ledger's order, and only once its line is in
// the file.
func TestWriterCommittedSeesEveryRecordOnDiskInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	var seen []string
	var notOnDisk []string
	w, err := OpenWriter(path, WriterOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "t",
		Committed: func(r *Record) {
			if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), r.ID) {
				notOnDisk = append(notOnDisk, r.ID)
			}
			seen = append(seen, r.ID)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		w.Append(NewRecord(Change{Event: EventWrite, Path: fmt.Sprintf("f%d", i), Intent: "INT-001"}, "t"))
		if i%10 == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := Scan(path, func(_ int, r *Record) error { want = append(want, r.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(want) != 51 || strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("committed %d records %v, the ledger holds %d %v", len(seen), seen, len(want), want)
	}
	if len(notOnDisk) > 0 {
		t.Errorf("records handed over before they were on disk: %v", notOnDisk)
	}
}
