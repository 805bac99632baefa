package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
)

// checkSigningKeysHidden refuses to start a session whose user could read
// a signing key of the mount: the agent would sign its own checkpoints.
// A key in a directory the session hides (the runtime directories) is out
// of its reach whoever owns it; elsewhere, the key must be another user's
// (root's), with no access for others, and the session must not run as
// root.
func checkSigningKeysHidden(e mounts.Entry, st *control.Status, uid uint32) error {
	if st == nil || !st.Signing.Signed {
		return nil
	}
	hidden := hiddenRuntimeDirs(e)
	for _, f := range st.Signing.KeyFiles {
		var fst syscall.Stat_t
		err := syscall.Stat(f, &fst)
		if err := signingKeyReachable(f, fst, err, uid, hidden); err != nil {
			return err
		}
	}
	return nil
}

// signingKeyReachable decides whether a session as uid could read the
// key file f (stat'ed as fst, or statErr), given the directories the
// session hides.
func signingKeyReachable(f string, fst syscall.Stat_t, statErr error, uid uint32, hidden []string) error {
	for _, h := range hidden {
		if f == h || strings.HasPrefix(f, filepath.Clean(h)+"/") {
			return nil
		}
	}
	switch {
	case statErr != nil:
		// Gone since the mount read it: nothing to read.
		return nil
	case uid == 0:
		return fmt.Errorf("the mount signs with %s, which a session as root could read: run the agent as an unprivileged user (--user)", f)
	case fst.Uid == uid:
		return fmt.Errorf("the mount's signing key %s is owned by the session's user (uid %d), who could read it and sign as the mount: make it root's (chown root:root %s), or keep it under %s, which sessions do not see", f, uid, f, mounts.RuntimeDir())
	case fst.Mode&0o077 != 0:
		return fmt.Errorf("the mount's signing key %s has mode %04o, which lets others read it: chmod 600 %s", f, fst.Mode&0o7777, f)
	}
	return nil
}
