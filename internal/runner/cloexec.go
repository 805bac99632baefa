package runner

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// closeRangeFunc is close_range(2)'s signature, for tests to stand in a
// kernel or a seccomp profile that refuses it.
type closeRangeFunc func(first, last uint, flags uint) error

// cloexecFrom marks every descriptor from first on close-on-exec, so none
// reaches the program started next. close_range(2) (Linux 5.11) does it
// in one call; where the kernel lacks it or a container's seccomp profile
// refuses it (ENOSYS, or EPERM with Docker's), each descriptor
// /proc/self/fd lists is marked instead.
func cloexecFrom(first int, closeRange closeRangeFunc) error {
	err := closeRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil || !(errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM)) {
		return err
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("close_range is unavailable, and listing the descriptors failed: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("close_range is unavailable, and listing the descriptors failed: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < first || fd == int(d.Fd()) {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, syscall.EBADF) {
			return fmt.Errorf("marking descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
