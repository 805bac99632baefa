package runner

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloexecFromWithoutCloseRange: where a seccomp profile refuses
// close_range, a descriptor inherited without close-on-exec must still
// not reach the session.
func TestCloexecFromWithoutCloseRange(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EPERM} {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC
		if err != nil {
			t.Fatal(err)
		}
		refused := func(uint, uint, uint) error { return errno }
		if err := cloexecFrom(3, refused); err != nil {
			t.Fatalf("close_range answering %v: %v", errno, err)
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		syscall.Close(fd)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("close_range answering %v: descriptor %d has flags %#x (%v), want FD_CLOEXEC", errno, fd, flags, err)
		}
	}
}
