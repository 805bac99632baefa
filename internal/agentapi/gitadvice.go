package agentapi

// The codes of the daemon's git gate (internal/gitgate, checked by a
// test): its refusals are denied at git's ref files, not at a file the
// agent edited, so scope advice about the denied path would be wrong.
const (
	codeCommitNotAccounted = "COMMIT_NOT_ACCOUNTED"
	codeGitRefWrite        = "GIT_REF_WRITE"
)

// gitAdvice is what to do after the git gate refused a branch move, ""
// for any other code.
func gitAdvice(code string) string {
	switch code {
	case codeCommitNotAccounted:
		return "A commit made in the mount may hold only content written through the mount under an intent whose scope covers it; " +
			"the reason names each file that was not. Take those files out of the commit (git reset -q HEAD -- FILE) and commit what you wrote in scope; " +
			"leave the others to the human. Do not work around it: every way of moving a branch is checked."
	case codeGitRefWrite:
		return "intentfs could not check where this change to git's refs would move a branch, so it refused it (the reason says why). " +
			"Move branches with git's own commands (git commit, git merge, git reset), not by writing .git's files; if that fails too, tell the human."
	}
	return ""
}
