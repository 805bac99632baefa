package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/intentfs/intentfs/internal/mounts"
)

// CheckMountpoint refuses a mountpoint that is already an intentfs mount
// and, unless allowNonEmpty, one with entries of its own. A second mount
// on a live one would stack over it, take over its registry entry and
// leave the first daemon unreachable; a mount over a non-empty directory
// would hide its files without a word.
func CheckMountpoint(mountpoint string, allowNonEmpty bool) error {
	if m, ok := mounts.IntentfsMountAt(mountpoint); ok {
		return fmt.Errorf("%s is already an intentfs mount (of %s); unmount it first: intentfs unmount %s", mountpoint, m.Source, mountpoint)
	}
	if allowNonEmpty {
		return nil
	}
	dir, err := os.Open(mountpoint)
	if err != nil {
		return fmt.Errorf("mountpoint %s: %w", mountpoint, err)
	}
	defer dir.Close()
	names, err := dir.Readdirnames(1)
	if len(names) > 0 {
		return fmt.Errorf("the mountpoint %s is not empty (it holds %q, …): the mount would hide its files; choose an empty directory, or pass --nonempty to mount over them", mountpoint, names[0])
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the mountpoint %s: %w", mountpoint, err)
	}
	return nil
}
