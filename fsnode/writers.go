package fsnode

import (
	"sort"
	"sync"
)

// writerSet is every handle open for writing on the mount.
type writerSet struct {
	mu  sync.Mutex
	set map[*File]struct{}
}

func (w *writerSet) add(f *File) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.set == nil {
		w.set = map[*File]struct{}{}
	}
	w.set[f] = struct{}{}
}

func (w *writerSet) remove(f *File) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.set, f)
}

// OpenWriter is a file open for writing through the mount, and the intent
// its changes are recorded under.
type OpenWriter struct {
	Path string `json:"path"`
	// Intent is the intent the handle was opened under; its changes are
	// recorded under it until it is closed, whatever is selected since.
	// "" for a handle on an exempt path.
	Intent string `json:"intent"`
	Pid    uint32 `json:"pid"`
}

// OpenWriters lists the files open for writing, by path.
func (r *Root) OpenWriters() []OpenWriter {
	w := &r.writers
	w.mu.Lock()
	files := make([]*File, 0, len(w.set))
	for f := range w.set {
		files = append(files, f)
	}
	w.mu.Unlock()
	out := make([]OpenWriter, 0, len(files))
	for _, f := range files {
		ow := OpenWriter{Pid: f.opener.Pid}
		if t := f.track.Load(); t != nil {
			ow.Intent = t.g.intent
			if t.g.proc != nil && ow.Pid == 0 {
				ow.Pid = t.g.proc.Pid
			}
			ow.Path = t.openRel
		}
		if rel, ok := f.node.relPath(); ok {
			ow.Path = rel
		}
		out = append(out, ow)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// checkpointWriters records the pending writes of every file open for
// writing through the mount.
func (r *Root) checkpointWriters() { r.checkpointWritersExcept(nil) }

// checkpointWritersExcept is checkpointWriters for every handle but
// those in skip.
func (r *Root) checkpointWritersExcept(skip map[*File]bool) {
	r.writers.mu.Lock()
	files := make([]*File, 0, len(r.writers.set))
	for f := range r.writers.set {
		if !skip[f] {
			files = append(files, f)
		}
	}
	r.writers.mu.Unlock()
	for _, f := range files {
		f.checkpoint(false)
	}
}

// checkpointSessionWriters is checkpointWriters for the handles opened by
// the processes of the agent session id.
func (r *Root) checkpointSessionWriters(id string) {
	r.writers.mu.Lock()
	files := make([]*File, 0, len(r.writers.set))
	for f := range r.writers.set {
		if t := f.track.Load(); t != nil && t.g.actor.Session != nil && t.g.actor.Session.ID == id {
			files = append(files, f)
		}
	}
	r.writers.mu.Unlock()
	for _, f := range files {
		f.checkpoint(false)
	}
}
