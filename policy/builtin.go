package policy

import "strings"

// Built-in rules. They apply before any intent and cannot be turned off by
// the policy file, because they protect the policy itself and the places
// from which a change turns into code that a human later runs.
//
//   - .orchestration/** is read-only: the policy and the ledger must not be
//     editable by the agent they govern.
//   - .git/config, .git/hooks/** and the .git directory itself (rename,
//     removal) are read-only: a hook or a config key such as core.fsmonitor
//     runs code on the human's next git command. An intent may still be
//     granted them explicitly, with a scope pattern that starts with ".git/"
//     (e.g. ".git/hooks/**"); a catch-all such as "**" does not grant them.
//   - everything else below .git/ is exempt, so git add and git commit work
//     with or without an intent.

// OrchestrationDir is the directory that holds the policy and the ledger.
const OrchestrationDir = ".orchestration"

type pathClass int

const (
	classOrdinary     pathClass = iota
	classPolicy                 // .orchestration and below
	classGitSensitive           // .git/config, .git/hooks/**, .git itself
	classGitExempt              // the rest of .git/**
)

func classify(op Op, rel string) pathClass {
	switch {
	case rel == ".git" && op == OpMkdir:
		// An empty .git is harmless; what goes in it is decided path by path.
		return classGitExempt
	case rel == OrchestrationDir || strings.HasPrefix(rel, OrchestrationDir+"/"):
		return classPolicy
	case rel == ".git" || rel == ".git/config" || rel == ".git/hooks" || strings.HasPrefix(rel, ".git/hooks/"):
		return classGitSensitive
	case strings.HasPrefix(rel, ".git/"):
		return classGitExempt
	}
	return classOrdinary
}

// grantsGitExplicitly reports whether an intent names a .git path in its
// scope and that pattern matches rel.
func grantsGitExplicitly(in *Intent, rel string) bool {
	if in == nil {
		return false
	}
	for _, p := range in.OwnedScope {
		if strings.HasPrefix(p, ".git/") || p == ".git" {
			if newScopeSet([]string{p}).matches(rel) {
				return true
			}
		}
	}
	return false
}
