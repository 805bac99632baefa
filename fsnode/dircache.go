package fsnode

import (
	"sync/atomic"
	"syscall"
)

// Each directory node caches an O_PATH descriptor for its *at calls (see
// Node.withDir). Unbounded, those descriptors are the daemon's whole
// table: an agent that makes thousands of directories and looks up a
// name in each (a node_modules install does as much) left the daemon
// unable to open anything, for root too, and its control socket unable
// to accept. So the mount caches at most a share of the descriptor
// limit; past it, a call opens a descriptor of its own and closes it.

// dirFdCache counts the directory descriptors the nodes of one mount hold.
type dirFdCache struct {
	// max is the bound: 0 follows the descriptor limit, negative caches
	// none.
	max  int
	held atomic.Int64
}

// bound returns how many descriptors may be cached now.
func (c *dirFdCache) bound() int64 {
	if c.max != 0 {
		return int64(c.max)
	}
	// Read each time: the limit can change under a running daemon (it
	// raises its own at start), and this runs only when a descriptor is
	// opened anyway.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 256
	}
	return int64(min(lim.Cur, 1<<30) / 4)
}

// take counts a descriptor about to be cached, reporting false when the
// cache is full and the descriptor must be closed after use instead.
func (c *dirFdCache) take() bool {
	if c.held.Add(1) > c.bound() {
		c.held.Add(-1)
		return false
	}
	return true
}

// give uncounts a cached descriptor that was closed.
func (c *dirFdCache) give() { c.held.Add(-1) }
