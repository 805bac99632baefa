package sessions

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type doctorJSON struct {
	Findings []struct {
		Check, Status, Detail, Fix string
	} `json:"findings"`
	Problems int `json:"problems"`
}

func (d doctorJSON) status(check string) (string, string, string) {
	for _, f := range d.Findings {
		if f.Check == check {
			return f.Status, f.Detail, f.Fix
		}
	}
	return "", "", ""
}

// TestDoctor: a root mount of a checkout whose files the agent may not
// write, then a mount attempted by another user over the lock the root
// mount left: doctor names each problem and its fix, and exits 1.
func TestDoctor(t *testing.T) {
	testenv.Serial(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.AgentPolicy)
	testenv.WriteFile(t, filepath.Join(repo, "src", "a.go"), "package a\n")
	c.MountCLI(repo, ws)
	// The mountpoint's parent, and so the source's (both are in the
	// test's directory), lets the agent search it.
	if err := os.Chmod(filepath.Dir(ws), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := c.Run("doctor", "--mount", ws, "--agent", "1000", "--json")
	var rep doctorJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("doctor of a mount the agent cannot write: exit %d, %v\n%s", code, err, out)
	}
	for check, want := range map[string]string{"mount": "ok", "dev_fuse": "ok", "lock": "ok", "agent_uid": "ok", "source_reachable": "problem", "source_ownership": "problem"} {
		if st, detail, _ := rep.status(check); st != want {
			t.Errorf("%s: %s (%s), want %s", check, st, detail, want)
		}
	}
	if _, detail, fix := rep.status("source_ownership"); !strings.Contains(detail, "may not write 4 of the checkout's files") || !strings.Contains(detail, "src (root:root 0755)") || !strings.Contains(fix, "chgrp -R devs") || strings.Contains(fix, "chown -R") {
		t.Errorf("ownership: %s / %s", detail, fix)
	}
	if _, detail, fix := rep.status("source_reachable"); !strings.Contains(detail, "can reach the source "+repo) || !strings.Contains(fix, "chmod 700 "+filepath.Dir(repo)) {
		t.Errorf("reachable: %s / %s", detail, fix)
	}
	c.Must("unmount", ws)

	// Another user meets the lock root's mount left behind.
	for _, d := range []string{filepath.Dir(c.Dir), c.Dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rt := testenv.AgentDir(t, true)
	out, code = c.RunAs(1000, rt, "doctor", "--source", repo, "--json")
	rep = doctorJSON{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("doctor as uid 1000: exit %d, %v\n%s", code, err, out)
	}
	lock := filepath.Join(repo, ".orchestration", ".intentfs.lock")
	if st, detail, fix := rep.status("lock"); st != "problem" || !strings.Contains(detail, "belongs to root:root") || !strings.Contains(fix, "sudo rm "+lock) {
		t.Errorf("lock: %s %s / %s", st, detail, fix)
	}
	ws2 := testenv.AgentDir(t, true)
	out, code = c.RunAs(1000, rt, "mount", repo, ws2)
	if code == 0 || !strings.Contains(out, "opening lock "+lock) || !strings.Contains(out, "belongs to uid 0") || !strings.Contains(out, "sudo rm "+lock) {
		t.Errorf("mount as uid 1000 over root's lock: exit %d\n%s", code, out)
	}
	if out := c.Must("doctor", "--help"); !strings.Contains(out, "Examples:") || !strings.Contains(out, "Exit codes") {
		t.Errorf("doctor --help:\n%s", out)
	}
}
