package history

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

// fixture is a source directory with an object store and a ledger, built
// by hand so the planner and blame can be tested without a mount.
type fixture struct {
	t     *testing.T
	src   string
	store *objects.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	src := t.TempDir()
	if err := os.Mkdir(filepath.Join(src, ".orchestration"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, src: src, store: objects.New(src)}
}

// hashOf is the ledger's hash of content ("" for none).
func hashOf(t *testing.T, content string) string {
	t.Helper()
	if content == "" {
		return ""
	}
	h, _, _, err := ledger.ContentHash(strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// write puts content at rel in the source.
func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.src, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// keep files content in the object store, as the mount does with a
// version a change destroys.
func (f *fixture) keep(content string) {
	f.t.Helper()
	p := filepath.Join(f.t.TempDir(), "version")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := f.store.KeepFd(fd, hashOf(f.t, content)); err != nil {
		f.t.Fatal(err)
	}
}

// source is the fixture as history sees it.
func (f *fixture) source() *Source {
	return &Source{Dir: f.src, Ledger: filepath.Join(f.src, ledger.FileName), Store: f.store}
}

// record writes records for changes (oldest first) to the ledger and
// returns them.
func (f *fixture) record(changes ...ledger.Change) []*ledger.Record {
	f.t.Helper()
	return f.recordEach(len(changes), func(i int, _ []*ledger.Record) ledger.Change { return changes[i] })
}

// recordEach writes n records to the ledger, the change of each made by
// change from the records before it (a restore names one), and returns
// them.
func (f *fixture) recordEach(n int, change func(i int, before []*ledger.Record) ledger.Change) []*ledger.Record {
	f.t.Helper()
	w, err := ledger.OpenWriter(f.source().Ledger, ledger.WriterOptions{Source: f.src, Version: "test"})
	if err != nil {
		f.t.Fatal(err)
	}
	recs := make([]*ledger.Record, n)
	for i := range n {
		recs[i] = ledger.NewRecord(change(i, recs[:i]), "test")
		w.Append(recs[i])
	}
	if err := w.Close(); err != nil {
		f.t.Fatal(err)
	}
	return recs
}
