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
