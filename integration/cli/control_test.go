package cli

import (
	"errors"

	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/ledger"
)

func TestControlDirIsHiddenButOpenable(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "", testenv.SeedTree())
	for _, script := range []string{"ls -a", "find . -maxdepth 1", "tar -cf - . | tar -tf -"} {
		if out := e.MustSh(script); hasEntry(out, ".intentfs") {
			t.Errorf("%s lists .intentfs:\n%s", script, out)
		}
	}
	if out := e.MustSh("ls .intentfs"); !strings.Contains(out, "active") || !strings.Contains(out, "status") || !strings.Contains(out, "denials") {
		t.Fatalf("ls .intentfs = %q", out)
	}
	// Listed like any directory: "." and "..", then the files, sorted.
	want := ". .. README.md active check context denials intents lesson mutation_class pending request status"
	if out := e.MustSh("ls -a1 .intentfs | LC_ALL=C sort | tr '\\n' ' '"); strings.TrimSpace(out) != want {
		t.Fatalf("ls -a .intentfs = %q, want %q", out, want)
	}
	if out := e.MustSh("cat .intentfs/active"); out != "none\n" {
		t.Fatalf("active = %q", out)
	}
	// Nothing can be created in, or renamed over, the control directory.
	for _, script := range []string{"echo x > .intentfs/new", "mkdir .intentfs", "rm -r .intentfs", "mv README.md .intentfs"} {
		if out, err := e.Sh(script); err == nil {
			t.Errorf("%s succeeded: %s", script, out)
		}
	}
}

func TestSelectThroughControlFile(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "", testenv.SeedTree())
	e.MustDeny("echo x > src/a.go")
	e.MustSh("echo INT-001 > .intentfs/active")
	if out := e.MustSh("cat .intentfs/active"); out != "INT-001\n" {
		t.Fatalf("active = %q", out)
	}
	e.MustSh("echo x > src/a.go")
	r := e.WaitRecord("select", func(r *ledger.Record) bool { return r.Gov().Event == ledger.EventSelect })
	if ledger.Str(r.Gov().IntentID) != "INT-001" || r.Gov().Process == nil || r.Gov().Process.Comm != "sh" {
		t.Fatalf("select record %+v", r.Gov())
	}
	var st control.Status
	if err := json.Unmarshal([]byte(e.MustSh("cat .intentfs/status")), &st); err != nil {
		t.Fatalf("status is not JSON: %v", err)
	}
	if st.ActiveIntent != "INT-001" || st.IntentStatus != "IN_PROGRESS" || st.LedgerPath != e.D.LedgerPath() || st.Counters.Denied != 1 {
		t.Fatalf("status = %+v", st)
	}
	e.MustSh("echo none > .intentfs/active")
	e.MustDeny("echo y > src/a.go")
}

func TestGarbageInControlFileIsEINVAL(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", testenv.SeedTree())
	tests := []struct {
		name string
		data []byte
		why  string
	}{
		{"unknown id", []byte("INT-999\n"), "unknown intent"},
		{"bad syntax", []byte("rm -rf /\n"), "exactly one value"},
		{"two ids in one write", []byte("INT-002\nINT-001\n"), "exactly one value"},
		{"an empty line", []byte("\n"), "empty write"},
		{"binary", []byte{0xff, 0x00, 0x01}, "not text"},
		{"complete intent", []byte("INT-004"), "COMPLETE"},
		{"huge", []byte(strings.Repeat("A", 5000)), "larger than 4 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.OpenFile(filepath.Join(e.Mnt, ".intentfs/active"), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Write(tt.data)
			f.Close()
			if !errorIs(err, syscall.EINVAL) {
				t.Fatalf("write err = %v, want EINVAL", err)
			}
			e.T = t
			e.WaitRecord("control denial", func(r *ledger.Record) bool {
				return r.Gov().Code == "INVALID_CONTROL_WRITE" && strings.Contains(r.Gov().Reason, tt.why)
			})
		})
	}
	e.T = t
	if out := e.MustSh("cat .intentfs/active"); out != "INT-001\n" {
		t.Fatalf("garbage changed the selection: %q", out)
	}
	for _, f := range []string{"status", "denials"} {
		if err := os.WriteFile(filepath.Join(e.Mnt, ".intentfs", f), []byte("x"), 0); err == nil {
			t.Errorf("write to %s succeeded", f)
		}
	}
	// dash's builtin echo reports every write error as "I/O error";
	// coreutils echo prints the errno the kernel returned.
	out, _ := exec.Command("sh", "-c", "/bin/echo INT-999 > "+filepath.Join(e.Mnt, ".intentfs/active")).CombinedOutput()
	if !strings.Contains(string(out), "Invalid argument") {
		t.Errorf("shell sees %q, want Invalid argument", out)
	}
}

func errorIs(err error, target syscall.Errno) bool {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err == target
	}
	return err == target
}

// hasEntry reports whether a listing names entry itself (as "entry",
// "./entry" or "./entry/").
func hasEntry(listing, entry string) bool {
	for _, l := range strings.Split(listing, "\n") {
		l = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(l), "./"), "/")
		if l == entry {
			return true
		}
	}
	return false
}

// TestControlFilesReportTheirSize: a control file's size is that of its
// content, now: `test -s` and a listing tell empty from full, and the size
// follows a change of the selection.
func TestControlFilesReportTheirSize(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "", testenv.SeedTree())
	e.MustSh("test -s .intentfs/README.md && test -s .intentfs/status && test -s .intentfs/intents && test -s .intentfs/active")
	if out, err := e.Sh("test -s .intentfs/lesson"); err == nil {
		t.Fatalf("the write-only lesson file reports a size: %s", out)
	}
	for _, f := range []string{"README.md", "active", "intents", "context", "mutation_class"} {
		if out := e.MustSh("stat -c %s .intentfs/" + f + "; wc -c < .intentfs/" + f); len(strings.Fields(out)) != 2 || strings.Fields(out)[0] != strings.Fields(out)[1] {
			t.Errorf("%s: stat size and content length differ: %q", f, out)
		}
	}
	e.MustSh("echo INT-001 > .intentfs/active")
	if out := e.MustSh("stat -c %s .intentfs/active"); strings.TrimSpace(out) != "8" {
		t.Fatalf("size of active after selecting INT-001 = %q, want 8", out)
	}
}
