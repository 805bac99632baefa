package fsnode

import (
	"testing"
	"time"
)

// SetEliding makes e answer as on a kernel that offered NO_OPEN_SUPPORT
// at INIT, which only a mounted connection can tell.
func (e *OpenElider) SetEliding(on bool) { e.elide = on }

// PendingCachedWriters is how many nodes hold a cached-path writer whose
// writes are not recorded yet.
func (r *Root) PendingCachedWriters() int { return len(r.cachedWriters.nodes()) }

// SetCachedWriteQuiet sets how long a cached-path writer's writes must
// pause before they are recorded without being asked, so a test on a
// loaded machine does not race the debounce.
func (r *Root) SetCachedWriteQuiet(d time.Duration) { r.cachedQuiet = d }

// LayOutWorktree is layOutWorktree, for the tests that serve the
// worktree through the raw requests.
func LayOutWorktree(t *testing.T) (wt, common, gitDir string) { return layOutWorktree(t) }
