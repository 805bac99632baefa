package fuseuring

import (
	"fmt"
	"os"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// mountDirect opens /dev/fuse and mounts it at mountpoint, as go-fuse's
// direct mount does, and returns the descriptor. The transport needs the
// descriptor for its ring commands, which go-fuse does not give out.
func mountDirect(mountpoint string, o *fuse.MountOptions, maxWrite int) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(mountpoint, &st); err != nil {
		return -1, fmt.Errorf("mountpoint %s: %w", mountpoint, err)
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening /dev/fuse: %w", err)
	}
	data := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", st.Mode&unix.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", maxWrite),
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	for _, opt := range o.Options {
		switch opt {
		case "nodev":
			flags |= unix.MS_NODEV
		case "dev":
			flags &^= unix.MS_NODEV
		case "nosuid":
			flags |= unix.MS_NOSUID
		case "suid":
			flags &^= unix.MS_NOSUID
		case "noexec":
			flags |= unix.MS_NOEXEC
		case "exec":
			flags &^= unix.MS_NOEXEC
		default:
			data = append(data, opt)
		}
	}
	if o.AllowOther {
		data = append(data, "allow_other")
	}
	source := o.FsName
	if source == "" {
		source = o.Name
	}
	if err := unix.Mount(source, mountpoint, "fuse."+o.Name, flags, strings.Join(data, ",")); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mount(2) of %s: %w", mountpoint, err)
	}
	return fd, nil
}
