package daemon

import "github.com/intentfs/intentfs/fsnode"

// Data paths: how reads and writes of existing files reach the source
// (see fsnode.OpenElider).
const (
	DataPathPassthrough = fsnode.DataPathPassthrough
	DataPathCached      = fsnode.DataPathCached
	DefaultDataPath     = fsnode.DefaultDataPath
)

// ParseDataPath checks a --data-path value.
func ParseDataPath(s string) (string, error) { return fsnode.ParseDataPath(s) }

// settleWrites records what the cached data path's writers have written
// (see fsnode.Root.SettleWrites); nothing before the mount is up.
func (d *Daemon) settleWrites() {
	if d.root != nil {
		d.root.SettleWrites()
	}
}

// checkpointWrites records what the cached data path's writers have
// written so far and keeps them writing, for a reader of the ledger (see
// fsnode.Root.CheckpointWrites); nothing before the mount is up.
func (d *Daemon) checkpointWrites() {
	if d.root != nil {
		d.root.CheckpointWrites()
	}
}
