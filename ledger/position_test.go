package ledger

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// scanPaths reads the paths of the records from pos on.
func scanPaths(t *testing.T, path string, from Position) (paths []string, end Position, found bool) {
	t.Helper()
	end, found, err := ScanRawFrom(path, from, func(_ string, _ Position, raw []byte) error {
		var r Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if p := r.Path(); p != "" {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths, end, found
}

func TestScanRawFromResumesAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.jsonl")
	w, err := OpenWriter(path, WriterOptions{MaxBytes: 4096, Source: "/s", Version: "t"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			w.Append(NewRecord(Change{Event: EventCreate, Path: fmt.Sprintf("f%03d", i), Intent: "INT-001"}, "t"))
			w.Flush()
		}
	}
	write(0, 5)
	all, end, found := scanPaths(t, path, Position{})
	if len(all) != 5 || !found || end.Line != 7 { // header, 5 records: next is line 7
		t.Fatalf("first scan: %v, end %+v, found %v", all, end, found)
	}
	// Enough to rotate the file twice; the scan resumes after f004.
	write(5, 60)
	next, end2, found := scanPaths(t, path, end)
	if !found || len(next) != 55 || next[0] != "f005" || next[54] != "f059" {
		t.Fatalf("resumed scan: found %v, %d paths %v", found, len(next), next)
	}
	if files, _ := Files(path); len(files) < 3 {
		t.Fatalf("the ledger did not rotate: %v", files)
	}
	// Nothing new: nothing read, the same end.
	if again, end3, found := scanPaths(t, path, end2); !found || len(again) != 0 || end3 != end2 {
		t.Fatalf("scan at the end: %v, %+v vs %+v", again, end3, end2)
	}
	w.Close()
	// A position in a file that is gone (the ledger was replaced) is not
	// found: the caller starts over.
	for _, f := range mustFiles(t, path) {
		os.Remove(f)
	}
	os.WriteFile(path, []byte{}, 0o600)
	if _, _, found := scanPaths(t, path, end2); found {
		t.Fatal("a position in a removed file was found")
	}
}

func TestScanRawFromSkipsALineStillBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.jsonl")
	full := `{"id":"a"}` + "\n"
	if err := os.WriteFile(path, []byte(full+`{"id":"b`), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	end, found, err := ScanRawFrom(path, Position{}, func(_ string, _ Position, raw []byte) error {
		got = append(got, string(raw))
		return nil
	})
	if err != nil || !found || len(got) != 1 || end.Offset != int64(len(full)) || end.Line != 2 {
		t.Fatalf("got %q, end %+v, found %v, err %v", got, end, found, err)
	}
	// Once the line is whole, a resumed scan reads it.
	os.WriteFile(path, []byte(full+`{"id":"b"}`+"\n"), 0o600)
	got = nil
	if _, found, err := ScanRawFrom(path, end, func(_ string, pos Position, raw []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", pos.Line, raw))
		return nil
	}); err != nil || !found || len(got) != 1 || got[0] != `2:{"id":"b"}` {
		t.Fatalf("resumed: %q %v %v", got, found, err)
	}
}

func mustFiles(t *testing.T, path string) []string {
	t.Helper()
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	return files
}
