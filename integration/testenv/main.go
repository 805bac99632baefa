package testenv

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/daemon"
)

// testBinary is the CLI binary of this test run. It is the package's only
// shared state: Main removes what the tests built.
var testBinary cliBinary

// CLIBinary returns the path of cmd/intentfs built for this test run,
// building it on first use; Main removes it when the run ends.
func CLIBinary() (string, error) { return testBinary.get() }

// Main gives the test process the umask a daemon process needs (the
// daemons of these tests run in it), runs defaultParallel tests at once
// unless -parallel is given, says in one line whether the FUSE tests mount
// for real or skip, and why, and removes the CLI binary when the run ends.
func Main(m *testing.M) {
	daemon.SetProcessUmask()
	flag.Parse()
	defaultParallelism()
	announce(fuseLine())
	code := m.Run()
	testBinary.remove()
	os.Exit(code)
}

// lockName is the file, in the temporary directory, that the integration
// tests of every package (and every checkout) on the machine lock while
// they run: Serial alone, Parallel shared.
const lockName = "intentfs-integration.lock"

// Serial makes t, a test that does not call t.Parallel, wait until no
// integration test of another package runs, and keeps it so until t ends.
// go test ./... runs several packages' test binaries at once, and what a
// serial test counts on holds only within the machine: an agent session's
// mount namespace copies every FUSE mount there is, another process's
// too, and covers each as it starts; status lists the kernel's intentfs
// mounts, five at most; a latency or a descriptor count is the machine's.
func Serial(t *testing.T) {
	t.Helper()
	holdLock(t, unix.LOCK_EX)
}

// Parallel is t.Parallel for an integration test: the test runs beside
// the other parallel tests of every package, but never beside a Serial
// one.
func Parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	holdLock(t, unix.LOCK_SH)
}

// holdLock takes the lock as how says (LOCK_EX, LOCK_SH) on a descriptor
// of t's own, so the tests of one process contend like those of two, and
// releases it when t and its cleanups (its mounts') are done.
func holdLock(t *testing.T, how int) {
	t.Helper()
	path := filepath.Join(os.TempDir(), lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("opening the integration tests' lock %s: %v (remove it if another user owns it)", path, err)
	}
	t.Cleanup(func() { f.Close() })
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		t.Fatalf("locking %s: %v", path, err)
	}
}

// defaultParallel is how many tests run at once unless -parallel says
// otherwise. The tests spend most of their time waiting: on polls of a
// ledger, on git, sh and setpriv, on a kernel round trip through a mount.
// GOMAXPROCS (go test's default, 2 on a small machine) leaves the CPUs
// idle through those waits.
const defaultParallel = 8

// defaultParallelism sets -test.parallel to defaultParallel where the
// command line did not set it.
func defaultParallelism() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(defaultParallel)); err != nil {
			panic(err)
		}
	}
}

// cliBinary builds cmd/intentfs on first use, so a run of tests that need
// no binary does not pay for the build.
type cliBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func (b *cliBinary) get() (string, error) {
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "intentfs-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "intentfs")
		var root string
		if root, b.err = moduleRoot(); b.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", b.path, "./cmd/intentfs")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/intentfs in %s: %w\n%s", root, err, out)
		}
	})
	return b.path, b.err
}

// ModuleFile is the absolute path of a file of the checkout under test,
// named from the module root: go test runs each package in its own
// directory, so a path relative to the working directory would depend on
// which package a test is in.
func ModuleFile(elem ...string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{root}, elem...)...), nil
}

// moduleRoot is the directory of the go.mod that holds this test run's
// package, whichever package directory the test binary runs in.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: the test runs outside a module; run it from the intentfs checkout")
	}
	return filepath.Dir(mod), nil
}

// remove deletes the binary, if one was built. It runs after every test,
// so no test races it.
func (b *cliBinary) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// whyNoFUSE says why the tests cannot mount here, "" if they can. They
// need root: they mount with allow_other and switch users with setpriv.
func whyNoFUSE() string {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return "/dev/fuse is not usable: " + err.Error()
	}
	f.Close()
	if os.Geteuid() != 0 {
		return "integration tests must run as root"
	}
	return ""
}

func fuseLine() string {
	why := whyNoFUSE()
	switch {
	case why == "":
		return "integration: FUSE tests mount for real (root, /dev/fuse)"
	case os.Getenv("INTENTFS_REQUIRE_FUSE") == "1":
		return "integration: FUSE tests FAIL: INTENTFS_REQUIRE_FUSE=1 but " + why
	}
	return "integration: FUSE tests SKIPPED: " + why + " (set INTENTFS_REQUIRE_FUSE=1 to make this a failure)"
}

// announce prints line where a reader of `go test ./...` sees it. That
// command shows a passing package's output only with -v, so without -v
// the line goes to the stderr of the go command that runs this binary
// (its parent): whether the mounts were real is the one thing a passing
// run must not hide.
func announce(line string) {
	if testing.Verbose() {
		fmt.Println(line)
		return
	}
	if w := parentStderr(); w != nil {
		fmt.Fprintln(w, line)
		w.Close()
		return
	}
	fmt.Println(line)
}

// parentStderr returns the stderr of the parent process if it is the go
// command, nil otherwise (a test binary run by hand, or by go test -exec).
// It takes the parent's very descriptor (pidfd_getfd), so the line and
// the go command's own output share one file offset; failing that, it
// reopens the descriptor only if it is a pipe or a terminal, where a new
// offset cannot overwrite what the go command writes.
func parentStderr() io.WriteCloser {
	ppid := os.Getppid()
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err != nil || strings.TrimSpace(string(comm)) != "go" {
		return nil
	}
	if pidfd, err := unix.PidfdOpen(ppid, 0); err == nil {
		fd, err := unix.PidfdGetfd(pidfd, 2, 0)
		unix.Close(pidfd)
		if err == nil {
			return os.NewFile(uintptr(fd), "go's stderr")
		}
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", ppid), os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeCharDevice|os.ModeSocket) == 0 {
		f.Close()
		return nil
	}
	return f
}
