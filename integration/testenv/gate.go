package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

// GateRepo is a clone owned by the agent of an origin with a README, a
// human's src/util.go and a second branch, mounted with INT-001 (src/**).
func GateRepo(t *testing.T) (c *CLI, e *Env, origin, base string) {
	t.Helper()
	return GateRepoWith(t, NotesPolicy)
}

// GateRepoWith is GateRepo with the policy pol.
func GateRepoWith(t *testing.T, pol string) (c *CLI, e *Env, origin, base string) {
	t.Helper()
	RequireFUSE(t)
	c = NewCLI(t)
	root := t.TempDir()
	os.Chmod(filepath.Dir(root), 0o755)
	os.Chmod(root, 0o755)
	origin, seed := filepath.Join(root, "origin.git"), filepath.Join(root, "seed")
	for _, d := range []string{origin, seed} {
		os.Mkdir(d, 0o755)
	}
	WriteFile(t, filepath.Join(seed, policy.IntentsFile), pol)
	scratch := t.TempDir()
	c.Must("init", scratch) // the .gitignore intentfs init writes
	gi, err := os.ReadFile(filepath.Join(scratch, ".orchestration", ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(seed, ".orchestration", ".gitignore"), string(gi))
	WriteFile(t, filepath.Join(seed, "README.md"), "# project\n")
	WriteFile(t, filepath.Join(seed, "src", "util.go"), "package api\n\nfunc util() {}\n")
	ChownTree(t, root)
	GitAs(t, origin, "git init -q --bare -b main .")
	GitAs(t, seed, "git init -q -b main . && git add -A && git commit -qm base && git push -q "+origin+" main")
	// The human's other branch: a different util.go.
	GitAs(t, seed, "git checkout -qb other && printf 'package api\\n\\nfunc util() { other() }\\n' > src/util.go && git commit -qam other && git push -q "+origin+" other && git checkout -q main")
	base = GitAs(t, seed, "git rev-parse main")
	src := filepath.Join(root, "clone")
	GitAs(t, root, "git clone -q "+origin+" clone && cd clone && git branch -q other origin/other")
	reg := t.TempDir()
	d := StartDaemonIn(t, src, t.TempDir(), "INT-001", reg)
	return c, &Env{T: t, Src: d.Source(), Mnt: d.Mountpoint(), D: d, Reg: reg}, origin, base
}
