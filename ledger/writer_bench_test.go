package ledger

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

// benchChange is a record as the daemon writes one for a file an agent
// created: a process with its command line, a content hash, lines.
func benchChange(i int) Change {
	return Change{
		Event:    EventCreate,
		Path:     fmt.Sprintf("src/net/http/file%05d.go", i),
		Intent:   "INT-001",
		PostHash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Lines:    120,
		Process: &Process{Pid: 4242, Uid: 1000, Gid: 1000, Comm: "tar",
			Cmdline: []string{"tar", "-xf", "/tmp/corpus.tar"}, Exe: "/usr/bin/tar"},
		Session: &Session{ID: "5d6f0c1e-6a43-4d59-9b0e-3c1f3f0c8a11", Name: "agent"},
		Time:    time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC),
	}
}

// BenchmarkWriterEncode is the writer's per-record CPU cost on its one
// goroutine: stamping the chain, encoding the line, its chain hash and
// its public form's hash. Every allowed change and denial pays it, in
// series.
func BenchmarkWriterEncode(b *testing.B) {
	w, err := OpenWriter(filepath.Join(b.TempDir(), "trace.jsonl"), WriterOptions{
		Rev: func() string { return "0123456789abcdef0123456789abcdef01234567" },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Source: "/src", Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	w.refreshRev()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := w.encode(NewRecord(benchChange(i), "bench")); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkWriterAppend is the writer end to end: records appended as
// fast as callers can, committed in groups (write and fsync), flushed.
func BenchmarkWriterAppend(b *testing.B) {
	w, err := OpenWriter(filepath.Join(b.TempDir(), "trace.jsonl"), WriterOptions{
		Rev: func() string { return "0123456789abcdef0123456789abcdef01234567" },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Source: "/src", Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w.Append(NewRecord(benchChange(i), "bench"))
		i++
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}
