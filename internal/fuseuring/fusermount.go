package fuseuring

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// mountFusermount has fusermount3 (set-user-ID root) mount for a user and
// pass the /dev/fuse descriptor back over a socket, as go-fuse does for
// users.
func mountFusermount(mountpoint string, o *fuse.MountOptions, maxWrite int) (int, error) {
	bin, err := fusermountBinary()
	if err != nil {
		return -1, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socketpair: %w", err)
	}
	local, remote := os.NewFile(uintptr(pair[0]), "fusermount-local"), os.NewFile(uintptr(pair[1]), "fusermount-remote")
	defer local.Close()
	defer remote.Close()
	opts := append([]string{}, o.Options...)
	if o.AllowOther {
		opts = append(opts, "allow_other")
	}
	if o.FsName != "" {
		opts = append(opts, "fsname="+o.FsName)
	}
	opts = append(opts, "subtype="+o.Name, fmt.Sprintf("max_read=%d", maxWrite))
	for i, opt := range opts {
		opts[i] = strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(opt)
	}
	cmd := exec.Command(bin, mountpoint, "-o", strings.Join(opts, ","))
	cmd.Env = []string{"_FUSE_COMMFD=3"}
	cmd.ExtraFiles = []*os.File{remote}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return -1, fmt.Errorf("%s: %w", bin, err)
	}
	buf, oob := make([]byte, 4), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(local.Fd()), buf, oob, 0)
	if err != nil {
		return -1, fmt.Errorf("receiving the /dev/fuse descriptor from %s: %w", bin, err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("%s passed no descriptor (%v)", bin, err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("%s passed no descriptor (%v)", bin, err)
	}
	unix.CloseOnExec(fds[0])
	return fds[0], nil
}

// unmountFusermount unmounts a user's mount.
func unmountFusermount(mountpoint string) error {
	bin, err := fusermountBinary()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-u", mountpoint)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s -u %s: %w: %s", bin, mountpoint, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func fusermountBinary() (string, error) {
	for _, name := range []string{"fusermount3", "/bin/fusermount3", "fusermount", "/bin/fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mounting as a user needs fusermount3 (Debian: apt-get install fuse3)")
}
