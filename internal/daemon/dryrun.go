package daemon

import (
	"fmt"

	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// DryRun puts a change to the policy in force as a dry run: the decision
// the mount would take for op on path right now, with the intents whose
// owned_scope covers path. Nothing is recorded and nothing changes, so
// hooks and MCP clients can ask before every write.
func (d *Daemon) DryRun(path, op string, by *ledger.Process) (control.DryRunResult, error) {
	if op == "" {
		op = string(policy.OpOpenWrite)
	}
	valid := false
	for _, o := range control.DryRunOps() {
		valid = valid || o == op
	}
	if !valid {
		return control.DryRunResult{}, fmt.Errorf("unknown operation %q: one of %s", op, strings.Join(control.DryRunOps(), ", "))
	}
	// An absolute path inside the mount is accepted as the agent sees it.
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(d.cfg.Mountpoint, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return control.DryRunResult{}, fmt.Errorf("%s is not inside the mount %s", path, d.cfg.Mountpoint)
		}
		path = rel
	}
	rel, ok := policy.CleanRel(path)
	if !ok {
		return control.DryRunResult{}, fmt.Errorf("%q is not a path inside the workspace", path)
	}
	snap := d.engine.Snapshot()
	active := d.actors.intentFor(by)
	pinned := false
	if s, err := d.actors.sessionOf(by); err == nil && s != nil {
		pinned = s.Pinned()
	}
	req := policy.Request{Op: policy.Op(op), Path: rel, IsDir: op == string(policy.OpMkdir) || op == string(policy.OpRmdir), Intent: active}
	// In observe mode the mount makes what the policy would refuse, so
	// the dry run answers as the mount would (allowed, with the refusal's
	// code and reason): a hook that asks first must not refuse it instead.
	dec := snap.Observed(req, snap.Decide(req))
	res := control.DryRunResult{Path: rel, Op: op, ActiveIntent: active, Allowed: dec.Allow, Code: string(dec.Code),
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

// explainFilePermissions adds to res why the source's own permissions
// refuse the change to the asker, when they do: through the mount the
// kernel refuses it before the policy is asked. A change the policy would
// allow becomes FILE_PERMISSIONS, so the asker is not sent after an
// intent or a scope that would change nothing.
func (d *Daemon) explainFilePermissions(res *control.DryRunResult, by *ledger.Process) {
	if d.root == nil {
		// Not mounted (yet): no kernel sits in front of the policy.
		return
	}
	ref, err := d.root.FilePermission(by.Pid, by.Uid, by.Gid, res.Path, res.Op)
	if err != nil {
		d.log.Debug("file permission check failed", "path", res.Path, "op", res.Op, "err", err)
		return
	}
	if ref == nil {
		return
	}
	res.FilePermissions = ref.Reason
	if !res.Allowed {
		return
	}
	res.PolicyCode = res.Code
	res.Allowed, res.Code = false, control.CodeFilePermissions
	res.Reason = ref.Reason + "; intentfs's policy would allow it (" + res.PolicyCode + "): the source's permissions, not intentfs, refuse it"
}

// maxPermissionProblems bounds the file permission problems a status
// lists.
const maxPermissionProblems = 16

// scopePermissions finds, for each live session, where the source's own
// permissions keep its uid out of its intent's owned_scope: for each
// scope pattern, the file it names or the deepest directory it is
// rooted in. It asks one question per pattern, so a status stays cheap.
func (d *Daemon) scopePermissions(sessions []agent.Info) []control.PermissionProblem {
	if d.root == nil {
		return nil
	}
	snap := d.engine.Snapshot()
	if snap == nil || snap.Intents == nil {
		return nil
	}
	var out []control.PermissionProblem
	for _, s := range sessions {
		in := snap.Intents.Get(s.Intent)
		if !s.Live || in == nil || s.Uid == 0 {
			continue
		}
		for _, pat := range in.OwnedScope {
			rel, op := scopeProbe(pat)
			if rel == "" {
				continue
			}
			ref, err := d.root.FilePermission(uint32(s.RootPid), s.Uid, s.Gid, rel, op)
			if err != nil || ref == nil {
				continue
			}
			why := strings.Replace(ref.Reason, "create "+rel+" in it", "create files in it", 1)
			out = append(out, control.PermissionProblem{Session: s.ID, Uid: s.Uid, Intent: in.ID, Path: ref.Path, Reason: why})
			if len(out) == maxPermissionProblems {
				return out
			}
		}
	}
	return out
}

// scopeProbe is the change that stands for a scope pattern: writing the
// file a literal pattern names, else creating a file in the directory
// the pattern's fixed part names.
func scopeProbe(pat string) (rel, op string) {
	if !strings.ContainsAny(pat, `*?[{\`) {
		return pat, "open_write"
	}
	base, _ := doublestar.SplitPattern(pat)
	if base == "." {
		return scopeProbeName, "create"
	}
	return base + "/" + scopeProbeName, "create"
}

// scopeProbeName is the file name a scope probe asks about creating.
const scopeProbeName = "intentfs-probe"
