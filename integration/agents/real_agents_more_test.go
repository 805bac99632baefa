package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"

	"github.com/intentfs/intentfs/internal/agentsim"
	"github.com/intentfs/intentfs/ledger"
)

// gitCommitAdvice is what intentfs tells an agent to do after the mount
// refused to move a branch to a commit that holds content not written
// through the mount in scope.
const gitCommitAdvice = "A commit made in the mount may hold only content written through the mount under an intent whose scope covers it; " +
	"the reason names each file that was not. Take those files out of the commit (git reset -q HEAD -- FILE) and commit what you wrote in scope; " +
	"leave the others to the human. Do not work around it: every way of moving a branch is checked."

// TestRealClaudeCodeGitCommitOutOfScope runs the real Claude Code, with
// intentfs's hooks, in a mounted clone whose active intent owns src/**:
// a `git commit` of README.md content never written through the mount
// is refused when git moves the branch, and the PostToolUseFailure
// context tells the model which commit rule refused it and why; an
// ordinary commit of an in-scope write passes and is recorded; the
// workspace verifies after the hooks were installed and the agent ran.
func TestRealClaudeCodeGitCommitOutOfScope(t *testing.T) {
	// Serial: it runs the real Claude Code, a heavy runtime, under a 120 s timeout, which other packages' tests loading the machine stretch.
	testenv.Serial(t)
	_, e, _, base := testenv.GateRepo(t)
	claude := realClient(t, "claude")
	bin := testenv.AgentBinary(t)
	installClaudeHooks(t, bin, e.Mnt, "INTENTFS_RUNTIME_DIR="+e.Reg)
	head := func() string { return testenv.GitAs(t, e.Src, "git rev-parse HEAD") }

	const identity = "git -c user.name=agent -c user.email=agent@example.com"
	model := agentsim.NewAnthropic(
		agentsim.Call("Bash", map[string]any{"command": "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && " +
			identity + " commit -qm tidy", "description": "commit the readme"}),
		agentsim.Call("Write", map[string]any{"file_path": e.Mnt + "/src/api.go", "content": "package api\n\nfunc Get() {}\n"}),
		agentsim.Call("Bash", map[string]any{"command": "git reset -q && git add src/api.go && " + identity + " commit -qm 'the api'", "description": "commit the api"}),
		agentsim.Say("finished"),
	)
	defer model.Close()
	res := runClaude(t, claude, e.Mnt, model, "commit the work", "--allowedTools", "Bash")
	results := model.ToolResults()
	t.Logf("the model received:\n%s", agentsim.Transcript(results))
	if res.IsError || res.Result != "finished" {
		t.Errorf("claude's result: %+v", res)
	}
	// The refused commit: git could not move the branch, and the context
	// names the commit's file and says how to commit, not how to get a
	// scope for git's ref file.
	if len(results) > 0 {
		r := results[0]
		wantText := "Exit code 128\nfatal: couldn't set 'refs/heads/main'"
		want := "PostToolUseFailure:Bash hook additional context: intentfs refused 1 change(s) in " + e.Mnt + " (each listed EACCES is a policy decision, not a bug; a \"Permission denied\" not listed here came from the file's own owner, mode or ACL: ask " + e.Mnt + "/.intentfs/check):\n" +
			"- rename .git/refs/heads/main (COMMIT_NOT_ACCOUNTED): refs/heads/main would move to commit(s) made in the mount that fail intentfs check: "
		wantAdvice := "  What to do: " + gitCommitAdvice + "\n"
		if r.Tool != "Bash" || !r.IsError || r.Text != wantText || !strings.HasPrefix(r.Context, want) ||
			!strings.Contains(r.Context, " README.md (outside the scope of INT-001): never written through the mount") || !strings.HasSuffix(r.Context, wantAdvice) {
			t.Errorf("after the refused commit the model received %q, then\n%q\nwant %q, then a context beginning\n%q\nnaming README.md and ending\n%q", r.Text, r.Context, wantText, want, wantAdvice)
		}
	}
	wantResult(t, results, 1, "Write", false, "File created successfully at: "+e.Mnt+"/src/api.go (file state is current in your context — no need to Read it back)")
	wantResult(t, results, 2, "Bash", false, "(Bash completed with no output)")

	ok := head()
	if ok == base {
		t.Fatal("the in-scope commit did not move HEAD")
	}
	if out := testenv.GitAs(t, e.Src, "git show --name-only --format= HEAD"); out != "src/api.go" {
		t.Errorf("the commit holds %q, want src/api.go alone", out)
	}
	if out := testenv.GitAs(t, e.Src, "git show HEAD^:README.md"); out != "# project" {
		t.Errorf("README.md in the commit's parent is %q", out)
	}
	e.WaitRecord("the commit record", func(r *ledger.Record) bool { return r.Gov().Event == ledger.EventCommit && r.Gov().Commit == ok })
	ledgerRecord(t, e.Src, "the refused commit", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && len(r.Files) > 0 && r.Files[0].Path == ".git/refs/heads/main"
	})
	// The hooks' file, written in the source by hook install, and the
	// agent's work leave the workspace verifying.
	if out, err := e.CLI("verify", "--source", e.Src); err != nil || !strings.HasPrefix(out, "OK") {
		t.Errorf("verify after hook install and the agent's commits: %v\n%s", err, out)
	}
}

// TestHookInstallInTheMountLeavesVerifyClean: intentfs hook install, run
// in the mount as a user does before starting the agent, writes the
// agent's hook file in the source and records it as accepted, for either
// agent, so the workspace verifies afterwards.
func TestHookInstallInTheMountLeavesVerifyClean(t *testing.T) {
	testenv.Serial(t)
	for _, c := range []struct{ agent, file string }{{"claude", ".claude/settings.json"}, {"codex", ".codex/hooks.json"}} {
		t.Run(c.agent, func(t *testing.T) {
			e := testenv.MountForSessions(t, "INT-005")
			cmd := testenv.CommandIn(e.Mnt, testenv.IntentfsBinary(t), "hook", "install", c.agent)
			cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg)
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "recorded "+c.file+" in the ledger") {
				t.Fatalf("hook install %s: %v\n%s", c.agent, err, out)
			}
			if _, err := os.Lstat(filepath.Join(e.Src, c.file)); err != nil {
				t.Fatalf("hook install wrote no %s in the source: %v", c.file, err)
			}
			if out, err := e.CLI("verify", "--source", e.Src); err != nil || !strings.HasPrefix(out, "OK") {
				t.Errorf("verify after hook install %s: %v\n%s", c.agent, err, out)
			}
		})
	}
}
