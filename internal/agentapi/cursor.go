package agentapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CursorStore remembers, per session and mount, the time of the newest
// denial a session was told about, so each denial is reported once. It
// is a directory of one small file per key, private to the agent's user.
type CursorStore struct{ Dir string }

// DefaultCursorStore is $TMPDIR/intentfs-hook-UID.
func DefaultCursorStore() *CursorStore {
	return &CursorStore{Dir: filepath.Join(os.TempDir(), fmt.Sprintf("intentfs-hook-%d", os.Getuid()))}
}

func (c *CursorStore) file(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:12]))
}

// ensure creates the directory, and refuses one that another user (or a
// symlink) put in its place: /tmp is shared.
func (c *CursorStore) ensure() error {
	if err := os.Mkdir(c.Dir, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("creating %s: %w", c.Dir, err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(c.Dir, &st); err != nil {
		return fmt.Errorf("checking %s: %w", c.Dir, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s is not a private directory of uid %d: remove it", c.Dir, os.Getuid())
	}
	return nil
}

// Get returns the cursor of key.
func (c *CursorStore) Get(key string) (time.Time, bool) {
	if c.ensure() != nil {
		return time.Time{}, false
	}
	f, err := os.OpenFile(c.file(key), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := f.Read(buf)
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(buf[:n])))
	return t, err == nil
}

// Set stores the cursor of key, atomically.
func (c *CursorStore) Set(key string, t time.Time) error {
	if err := c.ensure(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.Dir, ".cursor-*")
	if err != nil {
		return fmt.Errorf("saving the hook's cursor: %w", err)
	}
	_, werr := tmp.WriteString(t.UTC().Format(time.RFC3339Nano) + "\n")
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), c.file(key))
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the hook's cursor: %w", werr)
	}
	return nil
}
