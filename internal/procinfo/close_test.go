package procinfo

import (
	"os"
	"testing"
)

// TestCloseReleasesProcessHandles: the handles the cache keeps on live
// processes are released at Close.
func TestCloseReleasesProcessHandles(t *testing.T) {
	c := NewCache()
	if p := c.Lookup(uint32(os.Getpid()), uint32(os.Getuid()), uint32(os.Getgid())); p == nil {
		t.Fatal("no description of this process")
	}
	c.mu.Lock()
	held := len(c.byPid)
	c.mu.Unlock()
	if held == 0 {
		t.Skip("the cache keeps no handle on this kernel (no pidfd_open)")
	}
	c.Close()
	if len(c.byPid) != 0 {
		t.Errorf("%d processes still held after Close", len(c.byPid))
	}
}
