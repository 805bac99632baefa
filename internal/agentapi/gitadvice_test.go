package agentapi

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/gitgate"
)

// TestGitGateCodesAreTheGates: the codes the report advises about are the
// ones the daemon's git gate refuses with.
func TestGitGateCodesAreTheGates(t *testing.T) {
	if codeCommitNotAccounted != string(gitgate.CodeCommitRefused) || codeGitRefWrite != string(gitgate.CodeRefWrite) {
		t.Errorf("agentapi advises about %s and %s; the gate refuses with %s and %s",
			codeCommitNotAccounted, codeGitRefWrite, gitgate.CodeCommitRefused, gitgate.CodeRefWrite)
	}
}

// TestDenialsReportAdvisesAboutTheCommitNotTheRefFile: a branch move the
// git gate refused is denied at git's ref file; what the agent is told to
// do is about the commit (take out what it may not commit), not about a
// scope for .git/refs/heads/main, which no intent can or should cover.
func TestDenialsReportAdvisesAboutTheCommitNotTheRefFile(t *testing.T) {
	fm := &fakeMount{root: "/ws"}
	for _, c := range []struct {
		name   string
		denial control.Denial
		want   string
	}{
		{"commit not accounted", control.Denial{Op: "rename", Path: ".git/refs/heads/main", Code: codeCommitNotAccounted,
			Reason: "refs/heads/main would move to commit(s) made in the mount that fail intentfs check: ae3c README.md (outside the scope of INT-001): never written through the mount"},
			"Take those files out of the commit (git reset -q HEAD -- FILE)"},
		{"ref write not checkable", control.Denial{Op: "unlink", Path: ".git/refs/heads/side", Code: codeGitRefWrite,
			Reason: "removing refs/heads/side is refused: packed-refs does not parse, so what the branch would become cannot be checked"},
			"Move branches with git's own commands"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fm.asked = nil
			got := DenialsReportFor(fm, []control.Denial{c.denial}, nil)
			if !strings.Contains(got, "  What to do: ") || !strings.Contains(got, c.want) {
				t.Errorf("the report advises\n%s\nwant %q", got, c.want)
			}
			if strings.Contains(got, "owned_scope") || strings.Contains(got, "covers .git/") {
				t.Errorf("the report gives scope advice about git's ref file:\n%s", got)
			}
			if len(fm.asked) != 0 {
				t.Errorf("the report asked the mount about %v; a gate refusal's advice needs no dry run", fm.asked)
			}
		})
	}
}
