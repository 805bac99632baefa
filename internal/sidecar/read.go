package sidecar

import (
	"path/filepath"

	"github.com/intentfs/intentfs/internal/safeio"
)

// maxSidecarBytes bounds what the daemon reads back of a sidecar before
// rewriting it. The sidecars are the daemon's own files, but they sit in
// a workspace a human (or an earlier, unmounted agent session) can shape:
// a symlink, a FIFO or /dev/zero in their place must fail the update, not
// read another file, hang or exhaust memory.
const maxSidecarBytes = 32 << 20

// readSidecar reads the sidecar at path with safeio.ReadFile's rules.
func readSidecar(path string) ([]byte, error) {
	return safeio.ReadFile(filepath.Dir(path), filepath.Base(path), maxSidecarBytes)
}
