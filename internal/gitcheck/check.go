package gitcheck

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Finding kinds. Problems fail a check; notices are shown for review.
const (
	KindUntraced     = "untraced"     // never written through the mount
	KindOutOfScope   = "out_of_scope" // written under an intent whose scope does not cover it
	KindNoIntent     = "no_intent"    // written with no intent, or one the policy does not define
	KindContent      = "content"      // committed content matches no recorded version
	KindSubmodule    = "submodule"    // a submodule pointer: nothing in the mount writes one
	KindReadError    = "unreadable"   // the blob could not be read
	KindGovernance   = "governance"   // notice: a policy or sidecar file changed
	maxFindingsShown = 10000          // a report stays readable on a hostile range
	governanceNotice = "a governance file (policy, ignore file, intent map, lessons): never written through the mount; review the change"
)

// Finding is one path of one commit that is not accounted for, or a
// notice about it.
type Finding struct {
	Commit string `json:"commit"`
	Path   string `json:"path"`
	Status string `json:"status"` // A, M, D or T
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
	// Intent is the intent a matching record was written under, if any.
	Intent string `json:"intent,omitempty"`
}

// Report is the result of a check.
type Report struct {
	Range    []string  `json:"range"`
	Commits  int       `json:"commits"`
	Changes  int       `json:"changes"`
	Exempt   int       `json:"exempt"`
	Outside  int       `json:"outside_workspace"`
	Records  int       `json:"records_indexed"`
	Problems []Finding `json:"problems"`
	Notices  []Finding `json:"notices"`
	// Omitted counts findings beyond maxFindingsShown.
	Omitted int           `json:"omitted,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Accounted lists, per commit, the ids of the records that account
	// for its changes (for the commit record the mount writes).
	Accounted map[string][]string `json:"-"`
}

// OK reports whether no commit had a problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// Checker checks commits against an index of records and a policy.
type Checker struct {
	Repo  *gitexec.Repo
	Index *Index
	// Intents is the policy whose scopes judge records: the workspace's
	// current policy (see the package README for why not the one of each
	// commit).
	Intents *policy.Intents
	// Ignore exempts paths, as in the mount.
	Ignore *policy.Ignore
	// TrustedRules says that Intents and Ignore were read from a revision
	// the checked range cannot change (LoadRules): a change in the range
	// to a file that decides the rules (ClassifyPath) is then a problem,
	// which no ignore file exempts, instead of a notice. The mount's own
	// gate, which judges by the live policy, leaves it unset.
	TrustedRules bool
	// Prefix is the workspace's path below the top of the work tree ("" or
	// "dir/"); changes outside it are not this workspace's.
	Prefix string
	// Below is the work tree's path below the workspace ("" or "dir/"):
	// a repository nested in the workspace, whose paths the ledger names
	// with this prefix.
	Below string
	// Blobs, if set, reads the committed blobs: a long-lived cat-file the
	// caller keeps across checks. Otherwise each check starts its own.
	Blobs *gitexec.Blobs
	// Parents, if set, holds the parents of every commit CheckNew is
	// given (as rev-list --parents lists them), so finding the merges
	// among them runs no git.
	Parents map[string][]string
}

// Check checks every commit of revs (rev-list syntax): a non-merge
// commit by what it changes, a merge by what it holds that none of its
// parents has (as CheckNew does), so a merge cannot carry content of its
// own past the check.
//
// A revision name that more than one ref matches is an error
// (*AmbiguousError): the check must judge the branch that is published,
// not the ref git happens to prefer.
func (c *Checker) Check(ctx context.Context, revs []string) (*Report, error) {
	start := time.Now()
	if err := CheckNames(ctx, c.Repo, revs); err != nil {
		return nil, err
	}
	rep, err := c.run(ctx, nil, revs)
	if err != nil {
		return nil, err
	}
	args := append([]string{"rev-list", "--merges", "--reverse", "--end-of-options"}, revs...)
	out, err := c.Repo.Output(ctx, append(args, "--")...)
	if err != nil {
		return nil, fmt.Errorf("listing the merges of %s: %w", strings.Join(revs, " "), err)
	}
	if err := c.checkMerges(ctx, rep, strings.Fields(string(out))); err != nil {
		return nil, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func (c *Checker) run(ctx context.Context, opts, revs []string) (*Report, error) {
	start := time.Now()
	rep := &Report{Range: revs, Records: c.Index.Len(), Problems: []Finding{}, Notices: []Finding{}, Accounted: map[string][]string{}}
	blobs, done, err := c.blobs(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	err = c.Repo.Commits(ctx, gitexec.Query{Opts: opts, Revs: revs}, func(cm *gitexec.Commit) error {
		rep.Commits++
		for _, ch := range cm.Changes {
			c.checkChange(rep, blobs, cm.ID, ch)
		}
		return nil
	})
	rep.Elapsed = time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("reading commits %s: %w", strings.Join(revs, " "), err)
	}
	return rep, nil
}

// blobs returns the cat-file to read blobs with, and what to call when
// done with it.
func (c *Checker) blobs(ctx context.Context) (*gitexec.Blobs, func(), error) {
	if c.Blobs != nil {
		return c.Blobs, func() {}, nil
	}
	b, err := c.Repo.Blobs(ctx)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { b.Close() }, nil
}

func (c *Checker) add(rep *Report, f Finding, notice bool) {
	if len(rep.Problems)+len(rep.Notices) >= maxFindingsShown {
		if !notice {
			rep.Omitted++
		}
		return
	}
	if notice {
		rep.Notices = append(rep.Notices, f)
	} else {
		rep.Problems = append(rep.Problems, f)
	}
}

// isGovernance reports whether rel is a file the mount never lets the
// agent write, and which people or the daemon change: the policy, the
// ignore files, the intent map and lessons.
func isGovernance(rel string) bool {
	return rel == ".intentignore" || strings.HasPrefix(rel, policy.OrchestrationDir+"/")
}

func (c *Checker) checkChange(rep *Report, blobs *gitexec.Blobs, commit string, ch gitexec.Change) {
	rel, ok := strings.CutPrefix(ch.Path, c.Prefix)
	if !ok {
		if c.TrustedRules && c.governsWorkspace(ch.Path) && c.attributesChanged(blobs, ch) {
			// A .gitattributes above the workspace applies in it too.
			_, what := ClassifyPath(ch.Path)
			rep.Changes++
			c.add(rep, Finding{Commit: commit, Path: ch.Path, Status: string(ch.Status), Kind: KindGovernance, Detail: governanceProblem(what)}, false)
			return
		}
		rep.Outside++
		return
	}
	rel = c.Below + rel
	rep.Changes++
	f := Finding{Commit: commit, Path: rel, Status: string(ch.Status)}
	if c.TrustedRules {
		if g, notice, ok := c.governance(blobs, commit, rel, ch); ok {
			c.add(rep, g, notice)
			return
		}
	}
	switch {
	case c.Ignore.Match(rel, false):
		rep.Exempt++
		return
	case isGovernance(rel):
		f.Kind, f.Detail = KindGovernance, governanceNotice
		c.add(rep, f, true)
		return
	}
	var entries []Entry
	what := ""
	switch {
	case ch.Status == 'D':
		entries = c.Index.Deleted(rel)
		if len(entries) == 0 {
			f.Kind, f.Detail = KindUntraced, "deleted, but never deleted through the mount"
			c.add(rep, f, false)
			return
		}
		what = "deleted"
	case ch.NewMode == "160000":
		f.Kind, f.Detail = KindSubmodule, "a submodule commit pointer: nothing written through the mount makes one"
		c.add(rep, f, false)
		return
	case ch.NewMode == "120000":
		// A link's blob is its target: the record of its creation
		// accounts for it if it made the same target.
		hash, err := blobs.Hash(ch.NewBlob)
		if err != nil {
			f.Kind, f.Detail = KindReadError, "reading the committed blob: "+err.Error()
			c.add(rep, f, false)
			return
		}
		entries = c.Index.Symlinks(rel, hash)
		if len(entries) == 0 {
			f.Kind, f.Detail = KindUntraced, "a symlink never created through the mount"
			if c.Index.HasSymlink(rel) {
				f.Kind, f.Detail = KindContent, "a symlink whose target matches no recorded one ("+ledger.ShortHash(hash)+")"
			}
			c.add(rep, f, false)
			return
		}
		what = "created"
	case ch.Status == 'M' && ch.OldBlob == ch.NewBlob:
		entries = c.Index.Modes(rel)
		if len(entries) == 0 {
			f.Kind, f.Detail = KindUntraced, fmt.Sprintf("mode changed %s → %s, but never changed through the mount", ch.OldMode, ch.NewMode)
			c.add(rep, f, false)
			return
		}
		what = "changed"
	default:
		hash, err := blobs.Hash(ch.NewBlob)
		if err != nil {
			f.Kind, f.Detail = KindReadError, "reading the committed blob: "+err.Error()
			c.add(rep, f, false)
			return
		}
		entries = c.Index.Written(rel, hash)
		if len(entries) == 0 {
			f.Kind, f.Detail = KindUntraced, "never written through the mount"
			if c.Index.WroteAny(rel) {
				f.Kind, f.Detail = KindContent, "committed content matches no recorded version ("+ledger.ShortHash(hash)+")"
			}
			c.add(rep, f, false)
			return
		}
		what = "written"
	}
	by, bad := c.judge(rel, entries, what)
	if bad != nil {
		bad.Commit, bad.Path, bad.Status = commit, rel, string(ch.Status)
		c.add(rep, *bad, false)
		return
	}
	if by != nil && by.ID != "" {
		rep.Accounted[commit] = append(rep.Accounted[commit], by.ID)
	}
}

// judge accepts the change if any of its records was made under an
// intent whose scope covers rel; otherwise it says why the last one is
// not.
func (c *Checker) judge(rel string, entries []Entry, what string) (*Entry, *Finding) {
	var last *Finding
	for i := range entries {
		e := entries[i]
		id := e.Intent
		switch {
		case e.Event == ledger.EventRevert:
			return &entries[i], nil // intentfs revert, on a person's command, restoring a recorded version
		case e.Event == ledger.EventAccept:
			return &entries[i], nil // intentfs accept: a person took this content as theirs
		case e.Code == string(policy.CodeExempt):
			// intentfs's own write in the source (its section of the
			// agents' CLAUDE.md / AGENTS.md): nothing an agent governs
			// records an exempt change.
			return &entries[i], nil
		case id == "":
			last = &Finding{Kind: KindNoIntent, Detail: what + " with no intent selected"}
		case c.Intents == nil || c.Intents.Get(id) == nil:
			last = &Finding{Kind: KindNoIntent, Intent: id, Detail: fmt.Sprintf("%s under %s, which the policy does not define", what, id)}
		case !c.Intents.Get(id).InScope(rel) && e.RestoredFrom != "":
			// git put this content back outside the intent's scope (a
			// checkout, a merge of upstream work): it accounts for
			// nothing, and the intent did not write it.
			if last == nil {
				last = &Finding{Kind: KindUntraced, Detail: fmt.Sprintf("never written through the mount; only restored there by git, from %s", e.RestoredFrom)}
			}
		case !c.Intents.Get(id).InScope(rel):
			last = &Finding{Kind: KindOutOfScope, Intent: id, Detail: fmt.Sprintf("%s under %s, whose scope does not cover it", what, id)}
		default:
			return &entries[i], nil
		}
	}
	return nil, last
}
