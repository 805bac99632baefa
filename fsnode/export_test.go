package fsnode

// SetEliding makes e answer as on a kernel that offered NO_OPEN_SUPPORT
// at INIT, which only a mounted connection can tell.
func (e *OpenElider) SetEliding(on bool) { e.elide = on }

// PendingCachedWriters is how many nodes hold a cached-path writer whose
// writes are not recorded yet.
func (r *Root) PendingCachedWriters() int { return len(r.cachedWriters.nodes()) }
