package fsnode

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// seccompEnv makes the test binary, started again by
// TestChmodUnderSeccomp, refuse the newer system calls with the errno it
// names, as a container's seccomp profile does, and run the check.
const seccompEnv = "INTENTFS_TEST_SECCOMP_ERRNO"

// TestChmodUnderSeccomp runs chmod through setattrAt in a process whose
// seccomp filter refuses fchmodat2 and getxattrat, answering ENOSYS
// (podman's default profile) or EPERM (Docker's): the probe must see the
// calls refused, and chmod must still work, and still refuse a symlink
// without touching its target.
func TestChmodUnderSeccomp(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the filter's system call numbers are checked on amd64 and arm64")
	}
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EPERM} {
		t.Run(errno.Error(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSeccompChild$", "-test.v")
			cmd.Env = append(os.Environ(), seccompEnv+"="+strconv.Itoa(int(errno)), "INTENTFS_TEST_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("under a filter answering %v: %v\n%s", errno, err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// TestSeccompChild is TestChmodUnderSeccomp's other process.
func TestSeccompChild(t *testing.T) {
	v := os.Getenv(seccompEnv)
	if v == "" {
		t.Skip("started by TestChmodUnderSeccomp")
	}
	n, _ := strconv.Atoi(v)
	if err := refuseNewSyscalls(syscall.Errno(n)); err != nil {
		t.Fatalf("installing the seccomp filter: %v", err)
	}
	sys := probeNewSyscalls()
	if sys.fchmodat2 || sys.xattrAt {
		t.Fatalf("the probe sees %+v under a filter that refuses both", sys)
	}
	checkChmodAt(t, os.Getenv("INTENTFS_TEST_DIR"), sys.fchmodat2)
}

// TestChmodAtBothWays checks chmodAt with and without fchmodat2 on this
// kernel.
func TestChmodAtBothWays(t *testing.T) {
	for _, use := range []bool{true, false} {
		t.Run(strconv.FormatBool(use), func(t *testing.T) { checkChmodAt(t, t.TempDir(), use) })
	}
}

func checkChmodAt(t *testing.T, dir string, fchmodat2 bool) {
	t.Helper()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Symlink("target", filepath.Join(dir, "link"))
	dirfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	mode := func(name string) os.FileMode {
		st, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	if err := chmodAt(dirfd, "target", 0o600, fchmodat2); err != nil || mode("target") != 0o600 {
		t.Fatalf("chmod 600 target: %v, mode %o", err, mode("target"))
	}
	if err := chmodAt(dirfd, "target", 0o755, fchmodat2); err != nil || mode("target") != 0o755 {
		t.Fatalf("chmod +x target: %v, mode %o", err, mode("target"))
	}
	if err := chmodAt(dirfd, "sub", 0o700, fchmodat2); err != nil || mode("sub") != 0o700 {
		t.Fatalf("chmod 700 sub: %v, mode %o", err, mode("sub"))
	}
	if err := chmodAt(dirfd, "link", 0o600, fchmodat2); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("chmod of a symlink: %v, want EOPNOTSUPP", err)
	}
	if mode("target") != 0o755 {
		t.Fatalf("chmod of the symlink changed its target to %o", mode("target"))
	}
	if err := chmodAt(dirfd, "missing", 0o600, fchmodat2); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("chmod of a missing file: %v, want ENOENT", err)
	}
	// Through setattrAt, as SETATTR reaches it.
	in := &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_MODE, Mode: 0o640}}
	if err := setattrAt(dirfd, "target", in, fchmodat2); err != nil || mode("target") != 0o640 {
		t.Fatalf("setattrAt chmod 640: %v, mode %o", err, mode("target"))
	}
}

// refuseNewSyscalls installs, on every thread of the process, a seccomp
// filter that answers errno for fchmodat2, getxattrat and listxattrat
// and lets every other call through.
func refuseNewSyscalls(errno syscall.Errno) error {
	const (
		ldAbsW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq      = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret      = unix.BPF_RET | unix.BPF_K
		retErrno = unix.SECCOMP_RET_ERRNO
	)
	prog := []unix.SockFilter{
		{Code: ldAbsW, K: 0}, // seccomp_data.nr
		{Code: jeq, Jt: 3, K: unix.SYS_FCHMODAT2},
		{Code: jeq, Jt: 2, K: unix.SYS_GETXATTRAT},
		{Code: jeq, Jt: 1, K: unix.SYS_LISTXATTRAT},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: retErrno | uint32(errno)},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return e
	}
	return nil
}
