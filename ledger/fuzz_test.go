package ledger

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// FuzzVerifyLine replaces one line of a valid chain with arbitrary bytes.
// Verify must never panic, and any change to a line that has a successor
// must be reported: the chain is what makes the ledger evidence.
func FuzzVerifyLine(f *testing.F) {
	f.Add([]byte(`{"version":"0.1.0"}`), uint8(1))
	f.Add([]byte("not json"), uint8(2))
	f.Add([]byte(`{"version":"0.1.0","id":"00000000-0000-0000-0000-000000000000","timestamp":"2026-01-01T00:00:00Z","files":[]}`), uint8(3))
	f.Add([]byte("{\"a\":\"\xff\"}\n{}"), uint8(0))
	f.Fuzz(func(t *testing.T, line []byte, at uint8) {
		path, lines := writeChain(t, 4)
		i := int(at) % (len(lines) - 1) // a line with a successor
		if bytes.Equal(line, []byte(lines[i])) {
			return
		}
		lines[i] = string(line)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if rep := Verify(VerifyOptions{Ledger: path}); rep.OK() {
			t.Fatalf("line %d replaced by %q: verify reports nothing", i+1, line)
		}
	})
}

// FuzzRecordJSON decodes arbitrary JSON as a record: CheckRecord and the
// accessors the CLI uses must hold for anything a ledger line can say.
func FuzzRecordJSON(f *testing.F) {
	w := NewRecord(Change{Event: EventCreate, Path: "a/b", Intent: "INT-001", PostHash: EmptyHash}, "t")
	b, _ := json.Marshal(w)
	f.Add(b)
	f.Add([]byte(`{"files":[{"path":null,"conversations":[{"ranges":[{}]}]}],"metadata":{"intentfs":null}}`))
	f.Add([]byte(`{"files":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Record
		if json.Unmarshal(data, &r) != nil {
			return
		}
		_ = CheckRecord(&r)
		_ = r.Gov()
	})
}

// FuzzPublicForm: a public form is never a panic, is valid JSON, and is
// its own public form.
func FuzzPublicForm(f *testing.F) {
	f.Add([]byte(`{"metadata":{"dev.intentfs":{"prev":"x","process":{"exe":"/a/b","uid":1}}}}`))
	f.Add([]byte(`{"metadata":{"dev.intentfs":{}},"a":[1,{"b":"\"}"}],"a":null}`))
	f.Add([]byte("{\"metadata\":{\"dev.intentfs\":{\"reason\":\"\xff\"}}}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		p, err := PublicForm(line, Keep{})
		if err != nil {
			return
		}
		if !json.Valid(p) {
			t.Fatalf("%q: the public form %q is not JSON", line, p)
		}
		again, err := PublicForm(p, Keep{})
		if err != nil || !bytes.Equal(again, p) {
			t.Fatalf("%q: the public form %q is not its own (%q, %v)", line, p, again, err)
		}
		// The writer's hasher, which keeps its buffers, hashes a line as
		// a fresh one does, also after the line's own public form.
		var h publicHasher
		want := LineHash(p)
		for _, l := range [][]byte{line, p, line} {
			if got, err := h.hash(l); err != nil || got != want {
				t.Fatalf("%q: the reused hasher gives %s, %v; want %s", l, got, err, want)
			}
		}
	})
}
