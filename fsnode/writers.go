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
	files := r.writers.matching(nil)
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
	for _, f := range r.writers.matching(func(f *File) bool { return !skip[f] }) {
		f.checkpoint(false)
	}
}

// checkpointSessionWriters is checkpointWriters for the handles opened by
// the processes of the agent session id.
func (r *Root) checkpointSessionWriters(id string) {
	for _, f := range r.writers.matching(func(f *File) bool {
		t := f.track.Load()
		return t != nil && t.g.actor.Session != nil && t.g.actor.Session.ID == id
	}) {
		f.checkpoint(false)
	}
}

// recordUnreleased records, for the last time, what every handle still
// open for writing has written: the mount is closing, and no RELEASE
// will come for them.
func (r *Root) recordUnreleased() {
	for _, f := range r.writers.matching(nil) {
		f.checkpoint(true)
	}
}

// matching returns the handles for which keep is true (all of them for
// a nil keep), copied out of the set: a checkpoint records, and must not
// hold the set's lock meanwhile.
func (w *writerSet) matching(keep func(*File) bool) []*File {
	w.mu.Lock()
	defer w.mu.Unlock()
	files := make([]*File, 0, len(w.set))
	for f := range w.set {
		if keep == nil || keep(f) {
			files = append(files, f)
		}
	}
	return files
}
