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
	req := policy.Request{Op: policy.Op(op), Path: rel, IsDir: op == string(policy.OpMkdir) || op == string(policy.OpRmdir), Intent: active}
	// In observe mode the mount makes what the policy would refuse, so
	// the dry run answers as the mount would (allowed, with the refusal's
	// code and reason): a hook that asks first must not refuse it instead.
	dec := snap.Observed(req, snap.Decide(req))
	res := control.CheckResult{Path: rel, Op: op, ActiveIntent: active, Allowed: dec.Allow, Code: string(dec.Code),
		Reason: dec.Reason, CoveredBy: []control.IntentRef{}, Pinned: pinned}
	if snap != nil && snap.Intents != nil {
		for _, in := range snap.Intents.List {
			if rel != "" && in.InScope(rel) {
				res.CoveredBy = append(res.CoveredBy, control.IntentRef{ID: in.ID, Name: in.Name, Status: string(in.Status)})
			}
		}
	}
	return res, nil
}
