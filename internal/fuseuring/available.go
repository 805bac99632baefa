package fuseuring

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/intentfs/intentfs/internal/uring"
)

// EnableParam is the fuse module's switch for FUSE over io_uring.
const EnableParam = "/sys/module/fuse/parameters/enable_uring"

// Available returns nil if this kernel serves FUSE over io_uring now: the
// fuse module has it (EnableParam exists) and it is switched on, and this
// process may set up an io_uring whose URING_CMD reaches drivers. The
// error says which is missing and how to change it.
func Available() error {
	return available(EnableParam)
}

func available(param string) error {
	v, err := os.ReadFile(param)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("this kernel's fuse module has no FUSE over io_uring (Linux 6.14+ built with CONFIG_FUSE_IO_URING)")
	case err != nil:
		return fmt.Errorf("reading %s: %w", param, err)
	case !bytes.Equal(bytes.TrimSpace(v), []byte("Y")):
		return fmt.Errorf("FUSE over io_uring is switched off (%s is %s); as root: echo Y > %s", param, strings.TrimSpace(string(v)), param)
	}
	r, err := uring.New(2, uring.SetupSQE128)
	if err != nil {
		return fmt.Errorf("io_uring is not available to this process (see /proc/sys/kernel/io_uring_disabled): %w", err)
	}
	defer r.Close()
	ok, err := r.Supports(uring.OpURingCmd)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("this kernel's io_uring has no URING_CMD")
	}
	return nil
}

// possibleCPUs is the kernel's num_possible_cpus(), the number of queues
// of a FUSE ring, from a CPU list such as "0-3,5".
func possibleCPUs(list string) (int, error) {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("CPU list %q: %w", list, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("CPU list %q: bad range %q", list, part)
			}
		}
		n += b - a + 1
	}
	if n == 0 {
		return 0, fmt.Errorf("CPU list %q is empty", list)
	}
	return n, nil
}
