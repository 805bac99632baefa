package policy

import (
	"path"
	"strings"
)

// Built-in rules. They apply before any intent and cannot be turned off by
// the policy file, because they protect the policy itself and the places
// from which a change turns into code that a human later runs.
//
//   - Governance files are read-only: .orchestration/** (the policy, the
//     ledger, the kept versions) and the root .intentignore. Both decide
//     what the agent may change, so the agent must not edit them.
//   - Inside a git directory (.git/ at the root or in any subdirectory),
//     only what git writes in normal work is exempt: objects, refs, logs,
//     the index, HEAD and the other state files, and their lock files (see
//     gitState). Everything else is protected, because it changes what git
//     does on the human's next command: config and hooks run code;
//     commondir, gitdir, objects/info/alternates and a worktree's files
//     redirect git to directories the agent controls; info/exclude and
//     info/attributes hide files or attach filters; modules/ holds whole
//     git directories of their own. The .git entry itself (rename,
//     removal, or a .git file pointing elsewhere) is protected too.
//   - A protected git path can be granted to an intent explicitly, with a
//     scope pattern that names a .git directory (".git/hooks/**"); a
//     catch-all such as "**" does not grant it.
//   - .git/intentfs/ (MirrorDir) holds the daemon's mirror of the trusted
//     upstream: what it holds is taken as the upstream's content, so no
//     scope grants it, not even ".git/**".

// OrchestrationDir is the directory that holds the policy and the ledger.
const OrchestrationDir = ".orchestration"

// MirrorDir is the directory in the source's git directory where the
// daemon keeps its private mirror of the trusted upstream
// (internal/upstream).
const MirrorDir = ".git/intentfs"

// rootIgnoreFile is the ignore file at the workspace root; the other one
// lives in OrchestrationDir.
const rootIgnoreFile = ".intentignore"

type pathClass int

const (
	classOrdinary     pathClass = iota
	classPolicy                 // .orchestration and below, the root .intentignore
	classGitSensitive           // a .git entry and what it holds beyond git's work state
	classGitExempt              // git's work state inside a .git directory
)

func classify(op Op, rel string) pathClass {
	switch {
	case rel == OrchestrationDir || strings.HasPrefix(rel, OrchestrationDir+"/") || rel == rootIgnoreFile:
		return classPolicy
	case rel == MirrorDir || strings.HasPrefix(rel, MirrorDir+"/"):
		// Not even an explicit .git/** grant opens it: what it holds is
		// what the daemon trusts as the upstream's.
		return classPolicy
	}
	inner, ok := splitGitDir(rel)
	switch {
	case !ok:
		return classOrdinary
	case inner == "" && op == OpMkdir:
		// An empty .git is harmless; what goes in it is decided path by path.
		return classGitExempt
	case inner == "":
		return classGitSensitive
	case gitState(inner):
		return classGitExempt
	}
	return classGitSensitive
}

// splitGitDir finds the first ".git" component of rel and returns what
// lies below it ("" for the .git entry itself).
func splitGitDir(rel string) (inner string, ok bool) {
	if !strings.Contains(rel, ".git") { // the common case, decided without splitting
		return "", false
	}
	for rest := rel; ; {
		comp, tail, more := strings.Cut(rest, "/")
		if comp == ".git" {
			return tail, true
		}
		if !more {
			return "", false
		}
		rest = tail
	}
}

// gitState reports whether inner, a path inside a git directory, is state
// git writes in normal work (add, commit, checkout, branch, merge, rebase,
// cherry-pick, bisect, stash, fetch, gc): safe for an agent to change,
// because git only reads it as data, never as instructions. A lock file
// (name.lock) is decided like the file it locks.
func gitState(inner string) bool {
	inner = strings.TrimSuffix(inner, ".lock")
	top, below, _ := strings.Cut(inner, "/")
	switch top {
	case "objects":
		// alternates and http-alternates make git read objects from
		// elsewhere; the rest is object data, packs, commit graphs.
		return below != "info/alternates" && below != "info/http-alternates"
	case "refs", "logs", "reftable", "rebase-merge", "rebase-apply", "sequencer", "rr-cache", "lost-found", "NOTES_MERGE_WORKTREE":
		return true
	case "worktrees":
		// worktrees/<name>/ is a linked worktree's private state: the
		// same state files, but never its commondir or gitdir.
		name, state, _ := strings.Cut(below, "/")
		return name != "" && (state == "" || (!strings.HasPrefix(state, "objects") && gitState(state)))
	case "HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "MERGE_AUTOSTASH",
		"CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "AUTO_MERGE", "COMMIT_EDITMSG", "TAG_EDITMSG", "SQUASH_MSG",
		"NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF", "BISECT_LOG", "BISECT_START", "BISECT_TERMS", "BISECT_NAMES",
		"BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_HEAD", "BISECT_FIRST_PARENT", "BISECT_RUN",
		"index", "packed-refs", "shallow", "description", "gc.pid", "gc.log",
		// git writes a new packed-refs as packed-refs.new and renames it
		// over packed-refs (git branch -D, pack-refs); the rename is what
		// the commit gate judges.
		"packed-refs.new":
		return below == ""
	}
	// The split index writes sharedindex.<sha>; git stash and
	// git commit <paths> build temporary indexes (index.stash.<pid>,
	// next-index-<pid>); git init probes for symlink support with a
	// temporary tXXXXXX, which git never reads.
	return below == "" && (strings.HasPrefix(top, "sharedindex.") || isInitProbe(top) ||
		hasDigitsAfter(top, "index.stash.") || hasDigitsAfter(top, "next-index-"))
}

// hasDigitsAfter reports whether name is prefix followed by a number (a
// pid).
func hasDigitsAfter(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isInitProbe reports whether name is git init's mkstemp("tXXXXXX").
func isInitProbe(name string) bool {
	if len(name) != 7 || name[0] != 't' {
		return false
	}
	for _, c := range name[1:] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// DecideLock decides a file lock (flock, POSIX or OFD) taken through the
// mount on rel. A lock changes nothing, so only what a lock does to others
// is decided: intentfs's daemon and the humans' commands lock files among
// the protected paths (the policy's writer lock, the mount's own lock),
// and an agent holding such a lock would make them wait on it. Locks
// anywhere else are the agent's own business and pass.
func DecideLock(rel string) Decision {
	c, ok := CleanRel(rel)
	if !ok {
		return deny(CodeInternal, rel, "path is not inside the workspace")
	}
	if classify(OpLock, c) == classPolicy {
		return deny(CodeProtected, c, "locking "+c+" through the mount is refused: intentfs and the humans' commands (intentfs intent, approve) lock the files of "+
			OrchestrationDir+"/ and would wait on the agent's lock")
	}
	return Decision{Allow: true, Code: CodeAllowed, Validation: ValidationPass, Path: c}
}

// protectedReason says why a protected path is read-only.
func protectedReason(rel string) string {
	switch {
	case rel == rootIgnoreFile:
		return rel + " is read-only through the mount: the ignore files decide which changes are governed"
	case rel == OrchestrationDir || strings.HasPrefix(rel, OrchestrationDir+"/"):
		return rel + " is read-only through the mount: " + OrchestrationDir + "/ holds the policy, the ignore file and the ledger"
	case rel == MirrorDir || strings.HasPrefix(rel, MirrorDir+"/"):
		return rel + " is read-only through the mount: " + MirrorDir + "/ holds intentfs's mirror of the trusted upstream, which no scope can grant"
	}
	if _, inner, ok := GitDirOf(rel); ok && strings.HasPrefix(inner, "worktrees/") {
		return rel + " is read-only through the mount: a linked worktree's records (gitdir, commondir, locked) tie a work tree " +
			"outside the mount to this repository, whose commits would then enter it with none of their writes recorded, so " +
			"git worktree add is refused in a mount; give each agent a clone of its own (docs/worktrees.md), or grant it " +
			"explicitly with a scope pattern naming its .git directory, e.g. .git/worktrees/**"
	}
	return rel + " is read-only through the mount: it changes what git does on the next git command (config and hooks run code; commondir, gitdir, alternates, info/ and modules/ redirect or filter git); grant it explicitly with a scope pattern naming its .git directory, e.g. .git/hooks/**"
}

// grantsGitExplicitly reports whether an intent names a .git directory in
// a scope pattern that matches rel, or the file rel locks (config.lock is
// how git writes config).
func grantsGitExplicitly(in *Intent, rel string) bool {
	if in == nil {
		return false
	}
	for _, p := range in.OwnedScope {
		if _, names := splitGitDir(path.Clean(p)); !names {
			continue
		}
		set := newScopeSet([]string{p})
		if set.matches(rel) || (strings.HasSuffix(rel, ".lock") && set.matches(strings.TrimSuffix(rel, ".lock"))) {
			return true
		}
	}
	return false
}

// GitDirOf splits rel at its first .git component: the git directory's
// path in the workspace (".git", "sub/.git") and the path inside it (""
// for the .git entry itself).
func GitDirOf(rel string) (gitDir, inner string, ok bool) {
	inner, ok = splitGitDir(rel)
	if !ok {
		return "", "", false
	}
	return strings.TrimSuffix(strings.TrimSuffix(rel, inner), "/"), inner, true
}
