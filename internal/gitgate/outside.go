package gitgate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// git's writes outside the scope. A checkout, merge or reset changes the
// files git moves between commits, wherever they are; the scope, which
// decides before the content is known, would refuse those outside it.
// So a change by the real git binary, running a command that writes the
// work tree from commits, to a path outside the scope is let through on
// conditions that content it made up cannot meet:
//
//   - a file git creates is checked when it is closed (see
//     VerifyRestore): its bytes must be the blob at that path in a commit
//     of the repository's history from before the mount or of what a
//     configured remote has now, or a version the ledger recorded there. Otherwise the mount removes it,
//     puts back what git removed there just before, and close fails.
//   - a file git removes must hold content that can be put back (the
//     same test), and a commit a ref names must lack it or hold something
//     else there: a checkout moving toward that commit.
//   - a directory git creates must be a directory in a commit a ref
//     names; one it removes must not be in one.
//
// Commits made in the mount, and commits fetched from a place no remote
// of the repository's config names (the agent can make any commit outside
// the mount and fetch it), are not sources: a fetch brings objects, not a
// reason to trust them. Not even commits the commit gate accepted: a
// merge made in the mount is accepted when it adds nothing of its own
// (`git merge -s ours`), and would make whatever it merged reachable.

const (
	maxRemotes     = 16
	maxRemoteTips  = 1 << 16
	remoteCacheTTL = 5 * time.Second
)

// restoreCommands are git's commands that write the work tree from
// commits. Other commands that can write a file (diff --output, archive
// -o, bundle) are not let out of the scope: what they write is never a
// committed blob, and they may hold the file open for long.
var restoreCommands = map[string]bool{
	"checkout": true, "switch": true, "restore": true, "reset": true, "merge": true, "pull": true,
	"stash": true, "rebase": true, "cherry-pick": true, "revert": true, "read-tree": true,
	"checkout-index": true, "bisect": true, "sparse-checkout": true, "worktree": true,
}

// subcommand returns the git command of a git command line ("checkout"
// for `git -c x=y -C dir checkout f`), or "".
func subcommand(argv []string) string {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--config-env":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// GitRestoring reports whether p is the real git binary running a command
// that writes the work tree from commits.
func (g *Gate) GitRestoring(p *ledger.Process) bool {
	return p != nil && trustedGit(p.Exe) && restoreCommands[subcommand(p.Cmdline)]
}

// GitMayChange says whether git, restoring, may make the change op at rel
// outside the scope: the commit (or ledger record) that justifies it, or
// why not. hash is the sha256 of what an unlink removes; such a removal is
// justified by a commit a ref names that lacks the file, or, when rewrite
// is set, by one that has other content there: then git must create the
// file again (a checkout removes a file and creates it), which is checked
// when it is closed. A created file must be a file in some commit a ref
// names; it is checked when closed (VerifyRestore).
func (g *Gate) GitMayChange(ctx context.Context, op policy.Op, rel, hash string, p *ledger.Process) (from string, rewrite bool, why string) {
	if !g.GitRestoring(p) {
		return "", false, "not git restoring content"
	}
	st, inRepo, why := g.repoFor(ctx, rel)
	if st == nil {
		return "", false, why
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	since := time.Now()
	oid := ""
	if op == policy.OpUnlink {
		if hash == "" {
			return "", false, textsafe.Escape(rel) + " is not a regular file whose content can be put back"
		}
		tips, _ := g.tips(ctx, st, false)
		var err error
		if oid, err = blobOID(g.cfg.Source, rel, hash, len(tips) > 0 && len(tips[0]) == 64); err != nil {
			return "", false, err.Error()
		}
		if src := g.trustedSource(ctx, st, rel, inRepo, hash, oid, since); src == "" {
			return "", false, "its content is in no commit of the repository's history from before the mount or of its remotes, and in no ledger record: removed, it could not be put back"
		}
	}
	// A commit a ref names that has what git is moving toward: for a
	// removal, preferably one without the file.
	toward := func(tips []string) (string, bool, error) {
		kinds, err := g.objectsAt(ctx, st, tips, inRepo)
		if err != nil {
			return "", false, err
		}
		other := ""
		for i, k := range kinds {
			switch op {
			case policy.OpCreate:
				if k.typ == "blob" {
					return "commit " + tips[i], false, nil
				}
			case policy.OpMkdir:
				if k.typ == "tree" {
					return "commit " + tips[i], false, nil
				}
			case policy.OpRmdir:
				if k.typ != "tree" {
					return "commit " + tips[i], false, nil
				}
			case policy.OpUnlink:
				if k.typ != "blob" {
					return "commit " + tips[i], false, nil
				}
				if k.oid != oid && other == "" {
					other = "commit " + tips[i]
				}
			}
		}
		return other, other != "", nil
	}
	tips, at := g.tips(ctx, st, false)
	from, rewrite, err := toward(tips)
	if (from == "" || rewrite) && err == nil && at.Before(since) {
		if fresh, _ := g.tips(ctx, st, true); !slices.Equal(fresh, tips) {
			if f, r, err2 := toward(fresh); err2 != nil || f != "" && (from == "" || !r) {
				from, rewrite, err = f, r, err2
			}
		}
	}
	switch {
	case err != nil:
		return "", false, "the commits could not be read: " + err.Error()
	case from != "":
		return from, rewrite, ""
	case op == policy.OpCreate:
		return "", false, "no commit a ref names has a file at " + textsafe.Escape(rel)
	case op == policy.OpMkdir:
		return "", false, "no commit a ref names has a directory at " + textsafe.Escape(rel)
	case op == policy.OpRmdir:
		return "", false, "every commit a ref names has a directory at " + textsafe.Escape(rel)
	case op == policy.OpUnlink:
		return "", false, "every commit a ref names has this same file at " + textsafe.Escape(rel) + ": removing it moves toward none of them"
	}
	return "", false, "git may not " + string(op) + " outside the scope"
}

// VerifyRestore says where the content rel now holds (sha256 hash),
// written by git outside the scope, comes from: a commit of the
// repository's history from before the mount or of a configured remote,
// or a version the ledger recorded at rel. It returns why not otherwise.
func (g *Gate) VerifyRestore(ctx context.Context, rel, hash string, p *ledger.Process) (from, why string) {
	since := time.Now()
	if !g.GitRestoring(p) {
		return "", "not git restoring content"
	}
	if hash == "" {
		return "", "its content could not be hashed"
	}
	st, inRepo, why := g.repoFor(ctx, rel)
	if st == nil {
		return "", why
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	tips, _ := g.tips(ctx, st, false)
	oid, err := blobOID(g.cfg.Source, rel, hash, len(tips) > 0 && len(tips[0]) == 64)
	if err != nil {
		return "", err.Error()
	}
	if src := g.trustedSource(ctx, st, rel, inRepo, hash, oid, since); src != "" {
		return src, ""
	}
	return "", fmt.Sprintf("git wrote content (blob %s) that no commit of the repository's history from before the mount or on a configured remote has at %s, and that no ledger record wrote there",
		oid, textsafe.Escape(rel))
}

// repoFor returns the repository rel is in and rel's path in it.
func (g *Gate) repoFor(ctx context.Context, rel string) (*repoState, string, string) {
	if _, _, inGit := policy.GitDirOf(rel); inGit {
		return nil, "", "a path inside a git directory"
	}
	if err := g.ensureIndex(); err != nil {
		return nil, "", err.Error()
	}
	gitDir, inRepo, ok := g.repoOf(rel)
	if !ok || inRepo == "" || strings.ContainsAny(inRepo, "\n\x00") {
		return nil, "", "not in a git work tree"
	}
	st := g.repo(ctx, gitDir)
	if st.git == nil {
		return nil, "", "cannot run git on " + gitDir
	}
	return st, inRepo, ""
}

// trustedSource returns the trusted origin of content oid (sha256 hash)
// at rel, or "". See VerifyRestore.
func (g *Gate) trustedSource(ctx context.Context, st *repoState, rel, inRepo, hash, oid string, since time.Time) string {
	g.mu.Lock()
	by, ok := g.versions.lookup(rel, hash)
	base := slices.Clone(st.startTips)
	g.mu.Unlock()
	if ok {
		return by
	}
	remote, at := g.remoteTips(ctx, st, false)
	// The trees of the first trusted tips that refs name (a checkout's
	// target, mostly) are listed once for every file; then the path's
	// history.
	trusted := map[string]bool{}
	for _, t := range base {
		trusted[t] = true
	}
	for _, t := range remote {
		trusted[t] = true
	}
	tips, _ := g.tips(ctx, st, false)
	n := 0
	for _, t := range tips {
		if !trusted[t] || n == maxTrees {
			continue
		}
		n++
		if g.tree(ctx, st, t)[inRepo] == oid {
			return "commit " + t
		}
	}
	if c := g.history(ctx, st, append(slices.Clone(base), remote...), inRepo)[oid]; c != "" {
		return "commit " + c
	}
	if !at.Before(since) {
		return ""
	}
	// The remotes were asked before git wrote the file: ask again.
	fresh, _ := g.remoteTips(ctx, st, true)
	if slices.Equal(fresh, remote) {
		return ""
	}
	if c := g.history(ctx, st, append(base, fresh...), inRepo)[oid]; c != "" {
		return "commit " + c
	}
	return ""
}

// remoteTips lists the commits the remotes named in the repository's
// config have now (their branches and tags, by `git ls-remote`): fetched
// upstream work is trusted because the remote has it, not because it was
// fetched. The agent cannot name another remote (the config is
// protected); what it pushed to a remote it may push to is there, as it
// would be for anyone merging from that remote.
func (g *Gate) remoteTips(ctx context.Context, st *repoState, force bool) ([]string, time.Time) {
	g.mu.Lock()
	if !force && !st.remoteAt.IsZero() && time.Since(st.remoteAt) < remoteCacheTTL {
		t, at := st.remote, st.remoteAt
		g.mu.Unlock()
		return t, at
	}
	g.mu.Unlock()
	asked := time.Now()
	var tips []string
	out, _ := st.git.Output(ctx, "config", "--get-regexp", `^remote\..*\.url$`)
	var urls []string
	for _, l := range strings.Split(string(out), "\n") {
		_, url, ok := strings.Cut(l, " ")
		if ok && url != "" && !strings.HasPrefix(url, "-") && !slices.Contains(urls, url) && len(urls) < maxRemotes {
			urls = append(urls, url)
		}
	}
	seen := map[string]bool{}
	for _, url := range urls {
		cmd := st.git.Transport(ctx, "ls-remote", "--heads", "--tags", "--refs", url)
		b, err := cmd.Output()
		if err != nil {
			g.cfg.Log.Warn("listing a remote's refs failed", "remote", url, "err", err)
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			oid, _, ok := strings.Cut(l, "\t")
			if ok && gitexec.ValidOID(oid) && !seen[oid] && len(tips) < maxRemoteTips {
				seen[oid] = true
				tips = append(tips, oid)
			}
		}
	}
	slices.Sort(tips)
	g.mu.Lock()
	defer g.mu.Unlock()
	if asked.After(st.remoteAt) {
		st.remote, st.remoteAt = tips, asked
	}
	return tips, asked
}

// objectAt is what a commit has at a path.
type objectAt struct{ typ, oid string }

// objectsAt says, for each of tips, what it has at inRepo ("" typ for
// nothing), with one `git cat-file --batch-check`.
func (g *Gate) objectsAt(ctx context.Context, st *repoState, tips []string, inRepo string) ([]objectAt, error) {
	var in strings.Builder
	for _, t := range tips {
		fmt.Fprintf(&in, "%s:%s\n", t, inRepo)
	}
	b, err := st.git.OutputInput(ctx, []byte(in.String()), "cat-file", "--batch-check=%(objecttype) %(objectname)")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < len(tips) {
		return nil, fmt.Errorf("git cat-file answered %d of %d lines", len(lines), len(tips))
	}
	out := make([]objectAt, len(tips))
	for i := range out {
		// "<type> <id>", or "<tip>:<path> missing".
		f := strings.Fields(lines[i])
		if len(f) == 2 && f[1] != "missing" && gitexec.ValidOID(f[1]) {
			out[i] = objectAt{typ: f[0], oid: f[1]}
		}
	}
	return out, nil
}
