package daemon

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Check puts a change to the policy in force as a dry run: the decision
// the mount would take for op on path right now, with the intents whose
// owned_scope covers path. Nothing is recorded and nothing changes, so
// hooks and MCP clients can ask before every write.
func (d *Daemon) Check(path, op string, by *ledger.Process) (control.CheckResult, error) {
	if op == "" {
		op = string(policy.OpOpenWrite)
	}
	valid := false
	for _, o := range control.CheckOps() {
		valid = valid || o == op
	}
	if !valid {
		return control.CheckResult{}, fmt.Errorf("unknown operation %q: one of %s", op, strings.Join(control.CheckOps(), ", "))
	}
	// An absolute path inside the mount is accepted as the agent sees it.
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(d.cfg.Mountpoint, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return control.CheckResult{}, fmt.Errorf("%s is not inside the mount %s", path, d.cfg.Mountpoint)
		}
		path = rel
	}
	rel, ok := policy.CleanRel(path)
	if !ok {
		return control.CheckResult{}, fmt.Errorf("%q is not a path inside the workspace", path)
	}
	snap := d.engine.Snapshot()
	active := d.intentFor(by)
	pinned := false
	if s, err := d.sessionOf(by); err == nil && s != nil {
		pinned = s.Pinned()
	}
	dec := snap.Decide(policy.Request{Op: policy.Op(op), Path: rel, IsDir: op == string(policy.OpMkdir) || op == string(policy.OpRmdir), Intent: active})
	res := control.CheckResult{Path: rel, Op: op, ActiveIntent: active, Allowed: dec.Allow, Code: string(dec.Code),
		Reason: dec.Reason, CoveredBy: []control.IntentRef{}, Pinned: pinned}
	if by != nil {
		d.explainFilePermissions(&res, by)
	}
	if snap != nil && snap.Intents != nil {
		for _, in := range snap.Intents.List {
			if rel != "" && in.InScope(rel) {
				res.CoveredBy = append(res.CoveredBy, control.IntentRef{ID: in.ID, Name: in.Name, Status: string(in.Status)})
			}
		}
	}
	return res, nil
}

// explainFilePermissions turns res into a FILE_PERMISSIONS answer when
// the source's own permissions refuse the change to the asker: through
// the mount the kernel refuses it before the policy is asked, so that is
// the refusal the asker would meet. The policy's own decision is kept
// beside it.
func (d *Daemon) explainFilePermissions(res *control.CheckResult, by *ledger.Process) {
	ref, err := d.root.FilePermission(by.Pid, by.Uid, by.Gid, res.Path, res.Op)
	if err != nil {
		d.log.Debug("file permission check failed", "path", res.Path, "op", res.Op, "err", err)
		return
	}
	if ref == nil {
		return
	}
	res.PolicyCode, res.PolicyReason = res.Code, res.Reason
	verdict := "intentfs's policy would allow it (" + res.Code + "): the source's permissions, not intentfs, refuse it; " +
		"ask the human who owns the checkout to give your uid write access (see intentfs doctor)"
	if !res.Allowed {
		verdict = "intentfs's policy would refuse it too (" + res.Code + ")"
	}
	res.Allowed, res.Code = false, control.CodeFilePermissions
	res.Reason = ref.Reason + "; " + verdict
}
