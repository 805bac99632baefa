package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/ledger"
)

// TestCheckTellsFilePermissionsFromPolicy: an agent uid meets a
// "Permission denied" the kernel decides by the source's own mode, which
// intentfs never sees. .intentfs/check, asked by that uid, says so
// (FILE_PERMISSIONS, with the owner and mode), and keeps policy
// refusals as they were.
func TestCheckTellsFilePermissionsFromPolicy(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountPrepared(t, testenv.AgentPolicy, "INT-001", map[string]string{
		"src/root.go": "package x\n", "src/mine.go": "package x\n", "docs/mine.md": "d\n",
	}, func(src string) {
		for _, p := range []string{"src/root.go", "src/mine.go", "docs/mine.md"} {
			if err := os.Chmod(filepath.Join(src, p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"src/mine.go", "docs/mine.md"} {
			if err := os.Chown(filepath.Join(src, p), 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}
	})
	ask := func(q string) map[string]any {
		t.Helper()
		out, err := e.ShAs(1000, 1000, `exec 3<>.intentfs/check; printf '`+q+`' >&3; cat <&3`)
		if err != nil {
			t.Fatalf("check %q: %v\n%s", q, err, out)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("check %q: %v: %s", q, err, out)
		}
		return res
	}
	before := testenv.CountEvents(e, ledger.EventDenied)
	// The kernel refuses, intentfs records nothing.
	if out, err := e.ShAs(1000, 1000, `echo more >> src/root.go`); err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("uid 1000 appended to a root-owned 0644 file: %v %s", err, out)
	}
	res := ask("src/root.go")
	if res["allowed"] != false || res["code"] != "FILE_PERMISSIONS" || res["policy_code"] != "ALLOWED" || res["file_permissions"] == nil ||
		!strings.HasPrefix(res["reason"].(string), "src/root.go belongs to root:root 0644; uid 1000 may not write it") {
		t.Errorf("check of a root-owned file in scope: %v", res)
	}
	res = ask("create src/new.go")
	if res["code"] != "FILE_PERMISSIONS" || !strings.HasPrefix(res["reason"].(string), "src belongs to root:root 0755; uid 1000 may not create src/new.go in it") {
		t.Errorf("check of a new file in a root-owned directory: %v", res)
	}
	if res := ask("src/mine.go"); res["allowed"] != true || res["code"] != "ALLOWED" {
		t.Errorf("check of the agent's own file in scope: %v", res)
	}
	if res := ask("docs/mine.md"); res["allowed"] != false || res["code"] != "OUT_OF_SCOPE" {
		t.Errorf("check of the agent's own file out of scope: %v", res)
	}
	// Both refuse: the policy's code and advice, and the permissions
	// beside them.
	if res := ask("create docs/new.md"); res["code"] != "OUT_OF_SCOPE" ||
		res["file_permissions"] != "docs belongs to root:root 0755; uid 1000 may not create docs/new.md in it" {
		t.Errorf("check of a change both refuse: %v", res)
	}
	// Root, the daemon's own user, may write the file.
	if res, err := e.D.DryRun("src/root.go", "", nil); err != nil || !res.Allowed {
		t.Errorf("check without a caller: %+v %v", res, err)
	}
	if n := testenv.CountEvents(e, ledger.EventDenied); n != before {
		t.Errorf("%d denials recorded; the kernel's refusal and the checks record none", n-before)
	}
	// The hook, run as the agent, refuses the write as the file's
	// permissions, not the policy. (The agent reaches the mountpoint by
	// its absolute path: its parent must be searchable by uid 1000.)
	if err := os.Chmod(filepath.Dir(e.Mnt), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := e.ShAs(1000, 1000, `printf '%s' '{"hook_event_name":"PreToolUse","cwd":"`+e.Mnt+`","tool_name":"Edit","tool_input":{"file_path":"src/root.go"}}' | `+testenv.AgentBinary(t)+` hook claude`)
	if err != nil || !strings.Contains(out, "not intentfs's policy") || !strings.Contains(out, "FILE_PERMISSIONS") {
		t.Errorf("hook as the agent: %v\n%s", err, out)
	}
	// The status lists, for a live session, where its uid's own
	// permissions keep it out of its scope.
	// A session's root process runs in a pid namespace of its own.
	sleeper := exec.Command("unshare", "--pid", "--fork", "--kill-child", "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	children := fmt.Sprintf("/proc/%d/task/%d/children", sleeper.Process.Pid, sleeper.Process.Pid)
	var rootPid int
	testenv.WaitFor(t, func() bool {
		b, _ := os.ReadFile(children)
		_, err := fmt.Sscan(string(b), &rootPid)
		return err == nil
	}, "the session's root process")
	info, err := e.D.StartSession(agent.Spec{Name: "agent", User: "agent", Uid: 1000, Gid: 1000, RootPid: rootPid, Intent: "INT-001"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := e.D.Status()
	if len(st.FilePermissions) != 1 || st.FilePermissions[0].Session != info.ID || st.FilePermissions[0].Path != "src" ||
		st.FilePermissions[0].Reason != "src belongs to root:root 0755; uid 1000 may not create files in it" {
		t.Errorf("status file permissions: %+v", st.FilePermissions)
	}
}
