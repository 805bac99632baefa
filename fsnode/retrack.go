package fsnode

import (
	"slices"
	"syscall"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/policy"
)

// retrack re-evaluates the handles open for writing on moved, which a
// rename has just put at newRel (with everything below it, if it is a
// directory the kernel has looked into). A handle opened on an exempt
// path (a build directory, say) is not tracked; once a rename puts its
// file on a governed path, its writes change governed content, so it is
// tracked from the rename on, against the content the file has then.
// go-fuse moves the node in its tree only after Rename returns, so the
// new paths are computed here rather than asked of the nodes.
func (r *Root) retrack(moved *Node, newRel string) {
	type placed struct {
		node *Node
		rel  string
	}
	todo := []placed{{moved, newRel}}
	for i := 0; i < len(todo); i++ {
		p := todo[i]
		p.node.openMu.Lock()
		open := slices.Clone(p.node.open)
		p.node.openMu.Unlock()
		for _, f := range open {
			if t := f.track.Load(); t != nil && t.left.Load() {
				r.rejoin(p.rel, f, t)
				continue
			}
			if f.exemptWriter && f.track.Load() == nil {
				r.retrackHandle(p.node, p.rel, f)
			}
		}
		for name, ch := range p.node.Children() {
			if c, ok := ch.Operations().(*Node); ok {
				todo = append(todo, placed{c, p.rel + "/" + name})
			}
		}
	}
}

// retrackHandle starts tracking f, open on node, if node's path is now
// governed. A path the active intent does not cover is still tracked, so
// its writes reach the ledger, and the move of an open writer into it is
// recorded as a denial: the writes cannot be stopped once the handle is
// open (the kernel may pass them through), but they are never unrecorded.
func (r *Root) retrackHandle(node *Node, rel string, f *File) {
	// The handle's writes are its opener's: the intent in force for that
	// process (its session's, or the mount's) is what they answer to.
	a := r.actorOf(&f.opener)
	intent := a.Intent
	req := policy.Request{Op: policy.OpOpenWrite, Path: rel, Intent: intent,
		Caller: policy.Caller{Pid: f.opener.Pid, Uid: f.opener.Uid, Gid: f.opener.Gid}}
	snap := r.gov.Snapshot()
	d := observed(snap, req, snap.Decide(req))
	if d.Allow && d.Code == policy.CodeExempt {
		return
	}
	proc := r.gov.Process(&f.opener)
	if !d.Allow {
		d.Reason = "a file open for writing was moved to " + rel + ", where its writes are not allowed: " + d.Reason +
			"; the handle's writes are recorded as out of policy until it is closed"
		r.gov.Denied(req, d, proc, a.Session)
	}
	t := &tracking{node: node, openRel: rel, g: grant{decision: d, intent: intent, proc: proc, actor: a}}
	rfd, err := reopenReadOnly(f.fd)
	if err == nil {
		defer syscall.Close(rfd)
		t.base, err = r.hashes.HashFd(rfd)
	}
	if err != nil {
		// Without a baseline nothing later can be compared; say so where
		// the operator looks, and in the ledger.
		r.log.Error("a handle moved under governance could not be tracked", "path", rel, "err", err)
		r.gov.Denied(req, policy.Decision{Code: policy.CodeInternal, Validation: policy.ValidationFail, Path: rel,
			Reason: "a file open for writing was moved to " + rel + " but could not be hashed (" + err.Error() + "); its later writes through that handle are not recorded"}, proc, a.Session)
		return
	}
	t.preImage = r.keepCopy(rfd, t.base)
	var st syscall.Stat_t
	if syscall.Fstat(f.fd, &st) == nil {
		t.baseKey = objects.VersionOf(&st)
	}
	if f.track.CompareAndSwap(nil, t) {
		r.log.Info("tracking a handle moved under governance", "path", rel, "intent", intent, "pid", f.opener.Pid)
	}
}
