package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/daemon"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/ledger/ledgertest"
	"github.com/intentfs/intentfs/policy"
)

// RequireFUSE skips (or, with INTENTFS_REQUIRE_FUSE=1, fails) a test that
// cannot mount here. The tests need root: they mount with allow_other and
// switch users with setpriv.
func RequireFUSE(t *testing.T) {
	t.Helper()
	why := whyNoFUSE()
	if why == "" {
		return
	}
	SkipOrFail(t, "FUSE is unavailable: %s", why)
}

// SkipOrFail ends a test whose setup was refused, so that it would test
// nothing: a skip by default, a failure under INTENTFS_REQUIRE_FUSE=1,
// where CI must not count a test that checked nothing as a pass.
func SkipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("required (INTENTFS_REQUIRE_FUSE=1), but "+format, args...)
	}
	t.Skipf("skipping: "+format+" (set INTENTFS_REQUIRE_FUSE=1 to make this a failure)", args...)
}

// Env is one mounted workspace.
type Env struct {
	T        *testing.T
	Src, Mnt string
	D        *daemon.Daemon
	// reg is the registry directory the mount registered in, for CLI
	// commands run against it (INTENTFS_RUNTIME_DIR).
	Reg string
}

// ScopePolicy is the policy most tests mount: intents with scopes over SeedTree's paths.
const ScopePolicy = `active_intents:
  - id: INT-001
    name: api work
    status: IN_PROGRESS
    owned_scope: ["src/**", "docs/api.md"]
  - id: INT-002
    name: everything
    status: IN_PROGRESS
    owned_scope: ["**"]
  - id: INT-003
    name: not started
    status: PENDING
    owned_scope: ["**"]
  - id: INT-004
    name: done work
    status: COMPLETE
    owned_scope: ["**"]
`

// Mount starts a daemon on a fresh source holding policyYAML and the files
// in seed, with intent selected (if not ""). It unmounts in t.Cleanup,
// forcibly if the daemon cannot, so a failing test leaves no mount behind.
func Mount(t *testing.T, policyYAML, intent string, seed map[string]string) *Env {
	t.Helper()
	return MountPrepared(t, policyYAML, intent, seed, nil)
}

// MountPrepared is mount with a chance to change the source (modes,
// owners) before the mount caches its attributes.
func MountPrepared(t *testing.T, policyYAML, intent string, seed map[string]string, prepare func(src string)) *Env {
	t.Helper()
	RequireFUSE(t)
	return MountAt(t, t.TempDir(), policyYAML, intent, seed, prepare)
}

// MountAt is mountPrepared on a source directory the test provides
// (an ext4 image, a small tmpfs).
func MountAt(t *testing.T, src, policyYAML, intent string, seed map[string]string, prepare func(src string)) *Env {
	t.Helper()
	mnt := t.TempDir()
	// The test process runs with umask 0 (see Main), so TempDir makes
	// 0777 directories; give the source the mode a user's checkout has.
	if err := os.Chmod(src, 0o755); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(src, policy.IntentsFile), policyYAML)
	for p, c := range seed {
		WriteFile(t, filepath.Join(src, p), c)
	}
	if prepare != nil {
		prepare(src)
	}
	reg := t.TempDir()
	d := StartDaemonIn(t, src, mnt, intent, reg)
	return &Env{T: t, Src: d.Source(), Mnt: d.Mountpoint(), D: d, Reg: reg}
}

// TestTransport is the transport the suite runs on: INTENTFS_TRANSPORT
// ("": the daemon's default). .ci/run runs the suite once per transport.
func TestTransport() string { return os.Getenv("INTENTFS_TRANSPORT") }

// TestDataPath is the data path the suite's mounts use: INTENTFS_DATA_PATH
// ("": the daemon's default), so the suite can run on the cached path.
func TestDataPath() string { return os.Getenv("INTENTFS_DATA_PATH") }

// StartDaemon serves src at mnt from the test process, with intent
// selected, and unmounts in t.Cleanup, forcibly if the daemon cannot.
func StartDaemon(t *testing.T, src, mnt, intent string) *daemon.Daemon {
	t.Helper()
	return StartDaemonIn(t, src, mnt, intent, t.TempDir())
}

// StartDaemonIn is startDaemon registering the mount in the directory reg.
func StartDaemonIn(t *testing.T, src, mnt, intent, reg string) *daemon.Daemon {
	t.Helper()
	d, err := daemon.Start(daemon.Config{Source: src, Mountpoint: mnt, Intent: intent, Version: "test", Debug: os.Getenv("INTENTFS_TEST_DEBUG") == "1",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: mounts.Registry{Dir: reg}, Transport: TestTransport(),
		DataPath: TestDataPath()})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	if want := TestTransport(); want != "" && want != daemon.TransportAuto && d.Status().Transport != want {
		t.Fatalf("mounted over %q, but INTENTFS_TRANSPORT asks for %q", d.Status().Transport, want)
	}
	if want := TestDataPath(); want != "" && d.Status().DataPath != want {
		t.Fatalf("mounted on the %q data path, but INTENTFS_DATA_PATH asks for %q", d.Status().DataPath, want)
	}
	done := make(chan struct{})
	go func() { d.Wait(); d.Close(); close(done) }()
	t.Cleanup(func() {
		if err := d.Unmount(); err != nil {
			t.Errorf("unmount: %v\n%s", err, mountHolders(d.Mountpoint()))
			_ = syscall.Unmount(d.Mountpoint(), syscall.MNT_DETACH)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("daemon did not finish after unmount")
		}
	})
	return d
}

// WriteFile writes content to path, making its directories (0755).
func WriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// MkdirAll ran under umask 0; keep directories at 0755.
	for d := filepath.Dir(path); strings.HasPrefix(d, os.TempDir()+"/") && len(d) > len(os.TempDir())+1; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm() == 0o777 {
			os.Chmod(d, 0o755)
		}
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Sh runs script with sh -c in the mount.
func (e *Env) Sh(script string) (string, error) {
	out, err := CommandIn(e.Mnt, "sh", "-c", script).CombinedOutput()
	return string(out), err
}

// ShAs runs script as uid:gid (with no supplementary groups).
func (e *Env) ShAs(uid, gid int, script string) (string, error) {
	out, err := CommandIn(e.Mnt, "setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", "sh", "-c", script).CombinedOutput()
	return string(out), err
}

// CommandIn is exec.Command(name, args...) run in dir, where dir may be
// inside a mount served by this very process. The command starts
// elsewhere and changes into dir once it runs, never before its exec.
// Go starts a child with vfork: until the child has exec'd, the parent's
// goroutine counts as running, so a garbage collection that stops the
// world waits for it. A chdir into the mount before the exec can need an
// answer from the daemon (a permission check fetches ACLs, an attribute
// has expired), and the daemon's goroutines are stopped: both wait
// forever. A daemon in its own process, as intentfs mount runs it, is
// never in this position.
func CommandIn(dir, name string, args ...string) *exec.Cmd {
	return exec.Command("sh", append([]string{"-c", `cd "$0" && exec "$@"`, dir, name}, args...)...)
}

// MustSh fails the test if script fails.
func (e *Env) MustSh(script string) string {
	e.T.Helper()
	out, err := e.Sh(script)
	if err != nil {
		e.T.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

// MustDeny fails the test unless script fails with "Permission denied".
func (e *Env) MustDeny(script string) {
	e.T.Helper()
	out, err := e.Sh(script)
	if err == nil || !strings.Contains(out, "Permission denied") {
		e.T.Fatalf("%s: want Permission denied, got err=%v\n%s", script, err, out)
	}
}

// Records flushes the ledger, validates every line against the Agent
// Trace schema, and returns the records.
func (e *Env) Records() []*ledger.Record {
	e.T.Helper()
	if err := e.D.FlushLedger(); err != nil {
		e.T.Fatal(err)
	}
	ledgertest.ValidateFile(e.T, e.D.LedgerPath())
	var out []*ledger.Record
	if err := ledger.Scan(e.D.LedgerPath(), func(_ int, r *ledger.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		e.T.Fatal(err)
	}
	return out
}

// WaitRecord polls the ledger until a record matches, for changes recorded
// at RELEASE, which the kernel sends after close(2) has returned.
func (e *Env) WaitRecord(what string, match func(*ledger.Record) bool) *ledger.Record {
	e.T.Helper()
	var found *ledger.Record
	WaitFor(e.T, func() bool {
		for _, r := range e.Records() {
			if match(r) {
				found = r
				return true
			}
		}
		return false
	}, "a ledger record:", what)
	return found
}

// Event matches records of an event on a path.
func Event(ev ledger.Event, path string) func(*ledger.Record) bool {
	return func(r *ledger.Record) bool { return r.Gov().Event == ev && r.Path() == path }
}

// Sha returns the ledger form of the sha256 of the source file at rel.
func (e *Env) Sha(rel string) string {
	e.T.Helper()
	b, err := os.ReadFile(filepath.Join(e.Src, rel))
	if err != nil {
		e.T.Fatal(err)
	}
	return ShaOf(b)
}

// ShaOf is b's hash as the ledger writes it ("sha256:" and hex).
func ShaOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// SrcContent returns a source file's content, "" with ok=false if absent.
func (e *Env) SrcContent(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(e.Src, rel))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		e.T.Fatal(err)
	}
	return string(b), true
}

// HasLine says whether a line of text contains sub.
func HasLine(text, sub string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// DetachMount detaches the mount at dir, ignoring errors (a cleanup).
func DetachMount(dir string) { _ = syscall.Unmount(dir, syscall.MNT_DETACH) }

// WaitTimeout bounds every wait of these tests: long enough for a loaded
// machine running tests in parallel, where one poll can queue behind
// several tests' processes, and reached only when a test fails.
const WaitTimeout = 30 * time.Second

// WaitFor polls cond until it holds and fails the test if it does not
// within waitTimeout; what, if given, says what was awaited.
func WaitFor(t *testing.T, cond func() bool, what ...string) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			desc := "condition"
			if len(what) > 0 {
				desc = strings.Join(what, " ")
			}
			t.Fatalf("waited %v for %s", WaitTimeout, desc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mountHolders lists the processes whose working directory, root or open
// descriptors lie in the mount at mnt: what keeps it busy. A descriptor
// opened without close-on-exec leaks into children that other tests fork
// meanwhile, and this names them.
func mountHolders(mnt string) string {
	var b strings.Builder
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		dir := "/proc/" + p.Name()
		links := []string{dir + "/cwd", dir + "/root"}
		fds, _ := os.ReadDir(dir + "/fd")
		for _, fd := range fds {
			links = append(links, dir+"/fd/"+fd.Name())
		}
		for _, l := range links {
			if dst, err := os.Readlink(l); err == nil && (dst == mnt || strings.HasPrefix(dst, mnt+"/")) {
				cmdline, _ := os.ReadFile(dir + "/cmdline")
				fmt.Fprintf(&b, "  %s -> %q held by %q\n", l, dst, strings.ReplaceAll(string(cmdline), "\x00", " "))
			}
		}
	}
	if b.Len() == 0 {
		return "  no process holds it"
	}
	return "held by:\n" + b.String()
}
