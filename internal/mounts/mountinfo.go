package mounts

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// FSType is the kernel's file system type of an intentfs mount: go-fuse
// and fusermount3 both mount as "fuse." + the server's name.
const FSType = "fuse.intentfs"

// KernelMount is one line of /proc/self/mountinfo.
type KernelMount struct {
	Mountpoint string
	FSType     string
	// Source is the mount's source; for intentfs, the source directory.
	Source string
}

// KernelMounts returns the mounts of this process's mount namespace as the
// kernel sees them, whoever started them: unlike the registry, it also
// shows mounts of other users and of daemons that died.
func KernelMounts() ([]KernelMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	var out []KernelMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(postFields) < 2 {
			continue
		}
		out = append(out, KernelMount{Mountpoint: unescapeMount(fields[4]), FSType: postFields[0], Source: unescapeMount(postFields[1])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	return out, nil
}

// IntentfsMounts returns the intentfs mounts the kernel knows of, the
// topmost last when several are stacked on one mountpoint.
func IntentfsMounts() ([]KernelMount, error) {
	all, err := KernelMounts()
	if err != nil {
		return nil, err
	}
	var out []KernelMount
	for _, m := range all {
		if m.FSType == FSType {
			out = append(out, m)
		}
	}
	return out, nil
}

// IntentfsMountAt returns the intentfs mount at mountpoint, if there is one.
func IntentfsMountAt(mountpoint string) (KernelMount, bool) {
	mounts, _ := IntentfsMounts()
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].Mountpoint == mountpoint {
			return mounts[i], true
		}
	}
	return KernelMount{}, false
}
