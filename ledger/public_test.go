package ledger

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

func TestPublicForm(t *testing.T) {
	r := NewRecord(Change{Event: EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: EmptyHash,
		Process: &Process{Pid: 7, Uid: 1000, Gid: 1001, Comm: "sed", Exe: "/usr/bin/sed", Cmdline: []string{"sed", "-i", "s/a/b/", "--token=hunter2"}},
		Session: &Session{ID: "s1", Name: "agent", User: "agent"}}, "t")
	r.Gov().Prev, r.Gov().PrevPublic, r.Gov().Source = "sha256:prev", "sha256:pub", "/home/alice/repo"
	raw, _ := json.Marshal(r)
	tests := []struct {
		name    string
		keep    Keep
		has     []string
		hasNone []string
	}{
		{"nothing extra", Keep{}, []string{`"pid":7`, `"comm":"sed"`, `"exe":"sed"`, `"intent_id":"INT-001"`, `"prev_public":"sha256:pub"`, `"id":"s1"`},
			[]string{"hunter2", `"uid"`, `"gid"`, "/usr/bin", "/home/alice", `"prev":`}},
		{"cmdline", Keep{Cmdline: true}, []string{"--token=hunter2"}, []string{`"uid"`, "/home/alice"}},
		{"source", Keep{Source: true}, []string{`"source":"/home/alice/repo"`}, []string{"hunter2"}},
		{"uids", Keep{Uids: true}, []string{`"uid":1000`, `"gid":1001`}, []string{"hunter2"}},
		{"exe", Keep{Exe: true}, []string{`"exe":"/usr/bin/sed"`}, []string{"hunter2"}},
	}
	want, err := PublicHash(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		p, err := PublicForm(raw, tt.keep)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, s := range tt.has {
			if !strings.Contains(string(p), s) {
				t.Errorf("%s: the public form lacks %s: %s", tt.name, s, p)
			}
		}
		for _, s := range tt.hasNone {
			if strings.Contains(string(p), s) {
				t.Errorf("%s: the public form carries %s: %s", tt.name, s, p)
			}
		}
		// Whatever a form keeps, it has the line's public hash.
		if h, err := PublicHash(p); err != nil || h != want {
			t.Errorf("%s: public hash %s, %v; the line's is %s", tt.name, h, err, want)
		}
		var back Record
		if err := json.Unmarshal(p, &back); err != nil || CheckRecord(&back) != nil || back.ID != r.ID {
			t.Errorf("%s: the public form is not a record: %v", tt.name, err)
		}
	}
	if _, err := PublicForm([]byte("not json"), Keep{}); err == nil {
		t.Error("a line that is not JSON has a public form")
	}
}

// TestWriterChainsPublicHashes: each record names the public hash of the
// line before it, across a reopen and a rotation.
func TestWriterChainsPublicHashes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	opts := WriterOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Source: "/src", Version: "t", MaxBytes: 2048}
	for range 2 {
		w, err := OpenWriter(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		for range 6 {
			w.Append(NewRecord(Change{Event: EventCreate, Path: "f", PostHash: EmptyHash, Process: &Process{Pid: 1, Cmdline: []string{"x"}}}, "t"))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Files(path)
	if err != nil || len(files) < 2 {
		t.Fatalf("want a rotated ledger: %v %v", files, err)
	}
	prev := Genesis
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			var r Record
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			if r.Gov().PrevPublic != prev {
				t.Fatalf("%s line %q: prev_public %s, want %s", f, l, r.Gov().PrevPublic, prev)
			}
			prev, _ = PublicHash([]byte(l))
			n++
		}
	}
	if n < 14 {
		t.Fatalf("%d lines", n)
	}
}

func TestKnownIncludesArePolicys(t *testing.T) {
	if !slices.Equal(KnownIncludes(), policy.NotesIncludes()) {
		t.Fatalf("ledger keeps %v, the policy names %v", KnownIncludes(), policy.NotesIncludes())
	}
}

// TestPublicFormIsCanonical: the public form depends on the record's
// content, not on how its line is laid out, and forms nest: the public
// form of any public form is the line's own.
func TestPublicFormIsCanonical(t *testing.T) {
	base := `{"version":"0.1.0","id":"6a1e2b3c-4d5e-4f60-8172-839405a6b7c8","timestamp":"2026-01-01T00:00:00Z","tool":{"name":"intentfs","version":"t"},` +
		`"files":[{"path":"d\u00e9j\u00e0 \"q\".go","conversations":[{"contributor":{"type":"ai"},"ranges":[]}]}],` +
		`"metadata":{"dev.intentfs":{"event":"write","prev":"sha256:1","prev_public":"sha256:2","reason":"a <b> & \\ c",` +
		`"process":{"pid":1,"uid":2,"gid":3,"comm":"x","exe":"/bin/x","cmdline":["x","--token=hunter2"]}}}}`
	respaced := strings.NewReplacer(`,"`, `, "`, `":`, `" : `, `{`, "{ ", `}`, " }").Replace(base)
	reordered := `{"metadata":{"dev.intentfs":{"process":{"cmdline":["x","--token=hunter2"],"exe":"/bin/x","comm":"x","gid":3,"uid":2,"pid":1},` +
		`"reason":"a <b> & \\ c","prev_public":"sha256:2","prev":"sha256:other","event":"write"}},` +
		`"files":[{"conversations":[{"ranges":[],"contributor":{"type":"ai"}}],"path":"d\u00e9j\u00e0 \"q\".go"}],` +
		`"tool":{"version":"t","name":"intentfs"},"timestamp":"2026-01-01T00:00:00Z","id":"6a1e2b3c-4d5e-4f60-8172-839405a6b7c8","version":"0.1.0"}`
	want, err := PublicHash([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for name, line := range map[string]string{"respaced": respaced, "reordered": reordered} {
		if h, err := PublicHash([]byte(line)); err != nil || h != want {
			t.Errorf("%s: %s, %v; want %s", name, h, err, want)
		}
	}
	for _, keep := range []Keep{{}, {Cmdline: true}, {Source: true, Uids: true}, {Cmdline: true, Source: true, Uids: true, Exe: true}} {
		p, err := PublicForm([]byte(reordered), keep)
		if err != nil || !json.Valid(p) {
			t.Fatalf("%+v: %v %s", keep, err, p)
		}
		if h, err := PublicHash(p); err != nil || h != want {
			t.Errorf("%+v: the form's public hash %s, %v; want %s", keep, h, err, want)
		}
	}
	for _, bad := range []string{"", "[]", `{"metadata":1}`, `{"a":`, `{"metadata":{"dev.intentfs":`} {
		if _, err := PublicForm([]byte(bad), Keep{}); err == nil {
			t.Errorf("%q has a public form", bad)
		}
	}
}

// TestPublicHasherReused: the writer's hasher keeps its buffers from line
// to line; whatever came before, a line hashes as PublicHash has it.
func TestPublicHasherReused(t *testing.T) {
	long := NewRecord(Change{Event: EventCheckpoint, Path: "", Intent: "INT-001"}, "t")
	for i := range 40000 {
		long.Gov().Records = append(long.Gov().Records, fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
	}
	records := []*Record{
		NewRecord(Change{Event: EventCreate, Path: "a.go", Intent: "INT-001", PostHash: EmptyHash, Lines: 3,
			Process: &Process{Pid: 7, Uid: 1000, Gid: 1000, Comm: "tar", Exe: "/usr/bin/tar", Cmdline: []string{"tar", "-x"}}}, "t"),
		NewRecord(Change{Event: EventDenied, Path: "b/c.go", Intent: "INT-002", Reason: "outside <scope> & more", Code: "OUT_OF_SCOPE",
			Process: &Process{Pid: 8, Comm: "sh", Exe: "/bin/d\u00e9j\u00e0/sh"}}, "t"),
		NewRecord(Change{Event: EventRename, Path: "x", FromPath: "y", Intent: "INT-001", Ranges: []Range{{StartLine: 1, EndLine: 4}}}, "t"),
		long,
		NewRecord(Change{Event: EventDelete, Path: "z", Intent: "INT-001", Session: &Session{ID: "s", Name: "n"}}, "t"),
	}
	var lines [][]byte
	for i, r := range records {
		r.Gov().Prev, r.Gov().PrevPublic = fmt.Sprintf("sha256:%d", i), fmt.Sprintf("sha256:p%d", i)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	lines = append(lines, []byte(`{"z":1,"metadata":{"dev.intentfs":{"event":"write","a\u0062":2,"ab":3,"process":{"exe":"/bin/x","exe":"/sbin/y"}}},"a":[{"c":1,"b":[{"e":1,"d":2}]}]}`))
	var h publicHasher
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {3, 0, 3, 5, 1, 1}} {
		for _, i := range order {
			want, err := PublicHash(lines[i])
			if err != nil {
				t.Fatal(err)
			}
			if got, err := h.hash(lines[i]); err != nil || got != want {
				t.Errorf("line %d after others: %s, %v; want %s", i, got, err, want)
			}
		}
	}
}

// TestPublicFormExeBaseName: a public form keeps the base name of the
// program, encoded as encoding/json encodes it, whatever the name holds.
func TestPublicFormExeBaseName(t *testing.T) {
	for _, exe := range []string{"/usr/bin/sed", "sed", "/", "/a/b/", "a//b", "/tmp/a b", "/a/<b>", "/a/b&c",
		"/a/x\u2028y", "/a/d\u00e9j\u00e0", "/a/q\"uote", "/a/back\\slash", "/a/\x01ctl", "/a/\xffbad"} {
		r := NewRecord(Change{Event: EventWrite, Path: "a", Intent: "INT-001", Process: &Process{Pid: 1, Exe: exe}}, "t")
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		// The name as the line holds it (invalid UTF-8 already replaced).
		var held string
		if err := json.Unmarshal(must(json.Marshal(exe)), &held); err != nil {
			t.Fatal(err)
		}
		want := must(json.Marshal(held))
		if strings.Contains(held, "/") {
			want = must(json.Marshal(path.Base(held)))
		}
		p, err := PublicForm(raw, Keep{})
		if err != nil {
			t.Fatalf("%q: %v", exe, err)
		}
		if !strings.Contains(string(p), `"exe":`+string(want)+`}`) && !strings.Contains(string(p), `"exe":`+string(want)+`,`) {
			t.Errorf("%q: the public form does not carry exe %s: %s", exe, want, p)
		}
	}
}

// TestPublicFormExeOfOtherEncoders: a line from another encoder may hold
// what encoding/json escapes (<, >, &, U+2028) as it is; the base name is
// still written as encoding/json writes it.
func TestPublicFormExeOfOtherEncoders(t *testing.T) {
	for exe, want := range map[string]string{
		`/a/<b>`: `"\u003cb\u003e"`, `/a/b&c`: `"b\u0026c"`, "/a/x\u2028y": `"x\u2028y"`, `/a/plain`: `"plain"`,
	} {
		line := `{"metadata":{"dev.intentfs":{"event":"write","process":{"exe":"` + exe + `","pid":1}}}}`
		p, err := PublicForm([]byte(line), Keep{})
		if err != nil {
			t.Fatalf("%s: %v", exe, err)
		}
		if !strings.Contains(string(p), `"exe":`+want+`,`) {
			t.Errorf("%s: want exe %s: %s", exe, want, p)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
