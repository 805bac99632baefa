package control

import (
	"strings"
	"syscall"
	"testing"
	"unicode"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
)

// recordingBackend is the part of a Backend the control files' writes
// reach; it remembers what it was asked. Any other call panics, which the
// fuzzer would report.
type recordingBackend struct {
	Backend
	selected, lessons, classes []string
	invalid                    int
}

func (b *recordingBackend) Select(id string, _ *ledger.Process) error {
	b.selected = append(b.selected, id)
	return nil
}
func (b *recordingBackend) Lesson(text string, _ *ledger.Process) error {
	b.lessons = append(b.lessons, text)
	return nil
}
func (b *recordingBackend) DeclareClass(c string, _ *ledger.Process) error {
	b.classes = append(b.classes, c)
	return nil
}
func (b *recordingBackend) InvalidControlWrite(string, []byte, error, *ledger.Process) { b.invalid++ }

// FuzzControlWrite writes arbitrary bytes to the writable control files,
// as an agent can with write(2). Each write either does exactly one
// thing with one clean value, or is refused with EINVAL and recorded.
func FuzzControlWrite(f *testing.F) {
	for _, s := range []string{"INT-001\n", "INT-001", "none\n", "", "\n", "INT-001\nINT-002\n", " INT-001", "INT-001\r\n",
		"AST_REFACTOR\n", "a lesson\n", "\x00", "\xff\xfe", strings.Repeat("x", 5000)} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(2), []byte(s))
	}
	f.Add(uint8(1), []byte("Prefer small commits.\n"))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		b := &recordingBackend{}
		d := NewDir(b, func(*fuse.Caller) *ledger.Process { return &ledger.Process{} })
		caller := &fuse.Caller{}
		var errno syscall.Errno
		switch which % 3 {
		case 0:
			errno = d.writeActive(data, caller)
		case 1:
			errno = d.writeLesson(data, caller)
		default:
			errno = d.writeClass(data, caller)
		}
		done := len(b.selected) + len(b.lessons) + len(b.classes)
		switch {
		case errno == 0 && done != 1:
			t.Fatalf("write %q accepted but did %d things", data, done)
		case errno != 0 && done != 0:
			t.Fatalf("write %q refused (%v) but acted", data, errno)
		case errno != 0 && b.invalid != 1:
			t.Fatalf("write %q refused without being recorded", data)
		case errno != 0 && errno != syscall.EINVAL:
			t.Fatalf("write %q refused with %v, want EINVAL", data, errno)
		}
		for _, v := range append(b.selected, b.classes...) {
			if strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
				t.Fatalf("write %q passed on value %q with spaces or control characters", data, v)
			}
		}
	})
}

// FuzzCheckQuestion parses what an agent writes to .intentfs/check.
func FuzzCheckQuestion(f *testing.F) {
	for _, s := range []string{"src/a.go", "create src/a.go\n", "unlink  x", "\n", "a\nb", "bogus src/a", "\xff", "open_write "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		op, path, err := parseCheckQuestion(data)
		if err != nil {
			return
		}
		if path == "" || strings.ContainsAny(path, "\n\x00") {
			t.Fatalf("parseCheckQuestion(%q) accepted path %q", data, path)
		}
		if op != "" && !isDryRunOp(op) {
			t.Fatalf("parseCheckQuestion(%q) accepted op %q", data, op)
		}
	})
}
