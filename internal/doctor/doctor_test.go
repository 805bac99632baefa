package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

func find(fs []Finding, check string) Finding {
	for _, f := range fs {
		if f.Check == check {
			return f
		}
	}
	return Finding{}
}

// setupTree builds a sys root and a checkout at base/outer/src owned by
// uid 0, files 0644, outer at outerMode.
func setupTree(t *testing.T, outerMode os.FileMode) (sys, src string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the tree has files of several owners")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // the test's own directories, 0700 by default
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sys = filepath.Join(base, "sys")
	src = filepath.Join(base, "outer", "src")
	for _, d := range []string{filepath.Join(sys, "dev"), filepath.Join(sys, "sys/module/fuse/parameters"), filepath.Join(src, "pkg"), filepath.Join(src, ".orchestration")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(base, "outer"), outerMode); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.go", "pkg/b.go"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sys, src
}

func TestRun(t *testing.T) {
	agent := &Agent{Name: "agent", Uid: 1000, Gid: 1000}
	t.Run("a bare system and a checkout the agent can reach but not write", func(t *testing.T) {
		sys, src := setupTree(t, 0o755)
		if err := os.WriteFile(filepath.Join(sys, "sys/module/fuse/parameters/enable_uring"), []byte("N\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		fs := Run(Setup{Root: sys, Source: src, Agent: agent, Self: 1001})
		want := map[string]string{"dev_fuse": Problem, "enable_uring": Note, "lock": OK, "agent_uid": OK, "source_reachable": Problem, "source_ownership": Problem}
		for check, status := range want {
			if f := find(fs, check); f.Status != status || f.Detail == "" || status == Problem && f.Fix == "" {
				t.Errorf("%s: %+v, want %s with a detail and a fix", check, f, status)
			}
		}
		if f := find(fs, "source_ownership"); !strings.Contains(f.Detail, "may not write 4 of the checkout's files") || !strings.Contains(f.Detail, "FILE_PERMISSIONS") || !strings.Contains(f.Fix, "groupadd -f devs") ||
			!strings.Contains(f.Fix, "setfacl -R -d -m g::rwX "+src) || !strings.Contains(f.Fix, "setfacl -R -m g::rwX "+src) || strings.Contains(f.Fix, "chown") {
			t.Errorf("ownership: %+v", f)
		}
		if f := find(fs, "source_reachable"); !strings.Contains(f.Fix, "chmod 700 "+filepath.Dir(src)) {
			t.Errorf("reachable: %+v", f)
		}
		if Problems(fs) != 3 {
			t.Errorf("%d problems, want 3: %+v", Problems(fs), fs)
		}
	})
	t.Run("the canonical setup", func(t *testing.T) {
		sys, src := setupTree(t, 0o700)
		if err := os.WriteFile(filepath.Join(sys, "sys/module/fuse/parameters/enable_uring"), []byte("Y\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/fuse", filepath.Join(sys, "dev/fuse")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/dev/fuse"); err != nil {
			t.Skip("no /dev/fuse on this machine")
		}
		if err := filepath.Walk(src, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 1000, 1000)
		}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(src, 1001, 1000); err != nil { // the human owns the root, the agent's group may write
			t.Fatal(err)
		}
		if err := os.Chmod(src, 0o775); err != nil {
			t.Fatal(err)
		}
		fs := Run(Setup{Root: sys, Source: src, Agent: agent, Self: 1001})
		if Problems(fs) != 0 {
			t.Errorf("problems in the canonical setup: %+v", fs)
		}
	})
	t.Run("the agent is the human", func(t *testing.T) {
		sys, src := setupTree(t, 0o700)
		if err := os.Chown(src, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		f := find(Run(Setup{Root: sys, Source: src, Agent: agent}), "agent_uid")
		if f.Status != Problem || !strings.Contains(f.Fix, "intentfs run --user agent") {
			t.Errorf("%+v", f)
		}
	})
	t.Run("a stale lock of another user", func(t *testing.T) {
		sys, src := setupTree(t, 0o700)
		lock := filepath.Join(src, ledger.LockFile)
		if err := os.WriteFile(lock, []byte(`{"pid":1,"mountpoint":"/ws"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		f := find(Run(Setup{Root: sys, Source: src, Agent: agent, Self: 1001}), "lock")
		if f.Status != Problem || !strings.Contains(f.Detail, "opening lock "+lock+": permission denied") || !strings.Contains(f.Fix, "sudo rm "+lock) {
			t.Errorf("%+v", f)
		}
		if f := find(Run(Setup{Root: sys, Source: src, Agent: agent, Self: 0}), "lock"); f.Status != OK {
			t.Errorf("root may take the lock: %+v", f)
		}
	})
	t.Run("nothing named", func(t *testing.T) {
		fs := Run(Setup{Root: t.TempDir()})
		if f := find(fs, "source"); f.Status != Note || !strings.Contains(f.Fix, "--source") {
			t.Errorf("%+v", fs)
		}
		if f := find(fs, "enable_uring"); f.Status != Note || !strings.Contains(f.Detail, "absent") {
			t.Errorf("%+v", f)
		}
	})
}

func TestGitSafeDirectory(t *testing.T) {
	agent := &Agent{Name: "agent", Uid: 1000, Gid: 1000}
	sys, src := setupTree(t, 0o700)
	if err := os.Mkdir(filepath.Join(src, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		mountpoint string
		safe       []string
		status     string
		fix        string
	}{
		{"mounted, nothing safe", "/workspace", []string{}, Problem, "git config --system --add safe.directory /workspace"},
		{"mounted, another directory safe", "/workspace", []string{"/srv/other"}, Problem, "safe.directory /workspace"},
		{"mounted, the mountpoint safe", "/workspace", []string{"/srv/other", "/workspace"}, OK, ""},
		{"mounted, everything safe", "/workspace", []string{"*"}, OK, ""},
		{"not mounted yet", "", []string{}, Note, "safe.directory MOUNTPOINT"},
		{"config unreadable", "/workspace", nil, Note, "safe.directory /workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := find(Run(Setup{Root: sys, Source: src, Mountpoint: tc.mountpoint, Agent: agent, Self: 0, SafeDirectories: tc.safe}), "safe_directory")
			if f.Status != tc.status || f.Detail == "" || !strings.Contains(f.Fix, tc.fix) {
				t.Errorf("%+v, want %s with a fix naming %q", f, tc.status, tc.fix)
			}
		})
	}
	t.Run("the agent owns the checkout", func(t *testing.T) {
		if err := os.Chown(src, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		if f := find(Run(Setup{Root: sys, Source: src, Mountpoint: "/workspace", Agent: agent, SafeDirectories: []string{}}), "safe_directory"); f.Check != "" {
			t.Errorf("%+v, want no finding: git trusts the agent's own repository", f)
		}
	})
}
