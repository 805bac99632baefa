package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// workload is one measured task. prepare fills the source before it is
// mounted (untimed); phases run in the mount and are timed one by one.
type workload struct {
	name string
	// setup, if set, finds or fills what the workload needs from outside
	// the repository, once per harness run; an error skips the workload.
	setup   func(env *benchEnv) error
	prepare func(env *benchEnv, src string) error
	phases  []phase
	// expect is the least number of ledger records of these events an
	// intentfs run must leave, so a fast run that skipped work fails.
	expect func(env *benchEnv) (events []string, n int)
	// phaseRequests counts intentfs's requests phase by phase, asking
	// its status between phases. Only for phases that write nothing: on
	// the cached data path a status records what writers left pending,
	// which would move that work out of the next phase's time.
	phaseRequests bool
}

type phase struct {
	name string
	run  func(env *benchEnv, dir string) error
}

// benchEnv holds what workloads share.
type benchEnv struct {
	corpusTar   string // tar of the corpus (a directory named "src")
	corpusFiles int
	gitTar      string
	gitFiles    int
	repo        string // this repository, for the build workload
	gocache     string
	cache       string // kept between harness runs: package caches, downloads
	npmCache    string // npm's cache, filled once (see setupNpm)
	cTarball    string // the C project's source (see setupMake)
	parallel    int    // concurrent trees in the parallel workload
	baseBin     string // the intentfs-base mode's binary
	baseName    string // what it was built from, for the report
	// agent, if set, is who runs the timed phases (--uid): an agent
	// runs unprivileged, and some of intentfs's checks apply only then.
	agent *syscall.Credential
	self  string // this harness, re-run as the agent for the edit phase
}

func sh(dir, script string, env ...string) error {
	return shAs(nil, dir, script, env...)
}

// sh runs a timed phase's script as the agent (--uid), or as the harness
// runs when none was given.
func (e *benchEnv) sh(dir, script string, env ...string) error {
	return shAs(e.agent, dir, script, env...)
}

// shAs runs script in dir, with cred's uid and gid if set.
func shAs(cred *syscall.Credential, dir, script string, env ...string) error {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if cred != nil {
		// Its own HOME: git reads $HOME/.gitconfig, and the harness's
		// HOME may be closed to the agent.
		cmd.Env = append(cmd.Env, "HOME="+os.TempDir())
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", script, err, tail(string(out), 5))
	}
	return nil
}

func workloads() []workload {
	untar := func(e *benchEnv, dir string) error { return e.sh(dir, "tar -xf "+e.corpusTar) }
	untarPrepared := func(e *benchEnv, src string) error { return sh(src, "tar -xf "+e.corpusTar) }
	return []workload{
		{name: "untar", phases: []phase{{"untar", untar}},
			expect: func(e *benchEnv) ([]string, int) { return []string{"create"}, e.corpusFiles }},
		{name: "rm", prepare: untarPrepared,
			phases: []phase{{"rm", func(e *benchEnv, dir string) error { return e.sh(dir, "rm -rf src") }}},
			expect: func(e *benchEnv) ([]string, int) { return []string{"delete"}, e.corpusFiles }},
		// The corpus is written in the phase: a commit of files never
		// written through the mount is refused there (as check would).
		{name: "git",
			phases: []phase{
				{"git-commit", func(e *benchEnv, dir string) error {
					exclude := ""
					if e.agent != nil {
						// The daemon's own files are closed to the agent.
						exclude = " && echo /.orchestration/ >> .git/info/exclude"
					}
					return e.sh(dir, "tar -xf "+e.gitTar+" && git init -q ."+exclude+" && git add -A && git -c user.name=b -c user.email=b@b commit -qm corpus")
				}},
				{"git-status", func(e *benchEnv, dir string) error {
					return e.sh(dir, "for i in 1 2 3 4 5 6 7 8 9 10; do git status --porcelain >/dev/null || exit 1; done")
				}},
			},
			expect: func(e *benchEnv) ([]string, int) { return []string{"create", "mkdir"}, 1 }},
		{name: "build", prepare: func(e *benchEnv, src string) error {
			return sh(src, "tar -C "+e.repo+" --exclude=.git -cf - . | tar -xf -")
		},
			phases: []phase{
				{"build-cold", func(e *benchEnv, dir string) error {
					os.RemoveAll(e.gocache)
					return e.sh(dir, "go build ./...", "GOCACHE="+e.gocache, "GOFLAGS=-mod=mod", "GOPROXY=off")
				}},
				{"build-warm", func(e *benchEnv, dir string) error {
					return e.sh(dir, "go build ./... && go vet ./...", "GOCACHE="+e.gocache, "GOFLAGS=-mod=mod", "GOPROXY=off")
				}},
			}},
		{name: "stream", phases: []phase{
			{"stream-write", func(e *benchEnv, dir string) error {
				return e.sh(dir, "dd if=/dev/zero of=big bs=1M count=1024 status=none")
			}},
			{"stream-read", func(e *benchEnv, dir string) error { return e.sh(dir, "dd if=big of=/dev/null bs=1M status=none") }},
			{"small-writes", func(e *benchEnv, dir string) error {
				return e.sh(dir, "dd if=/dev/zero of=small bs=4k count=100000 status=none")
			}},
		}},
		{name: "edit", prepare: func(e *benchEnv, src string) error { return sh(src, "tar -xf "+e.gitTar) },
			phases: []phase{{"edit", editsAsAgent}},
			expect: func(e *benchEnv) ([]string, int) { return []string{"rename"}, 2000 }},
		{name: "search", setup: setupSearch, prepare: untarPrepared,
			phases: searchPhases(), phaseRequests: true},
		{name: "parallel", setup: setupSearch, prepare: prepareParallel, phases: parallelPhases(),
			expect: func(e *benchEnv) ([]string, int) { return []string{"create"}, e.parallel * e.corpusFiles }},
		{name: "npm", setup: setupNpm, prepare: func(e *benchEnv, src string) error { return copyProject(e, src) },
			phases: npmPhases(),
			// 257 packages, each at least a package.json.
			expect: func(e *benchEnv) ([]string, int) { return []string{"create"}, 257 }},
		{name: "make", setup: setupMake, prepare: prepareMake, phases: makePhases(),
			// Lua's objects, its library and two programs.
			expect: func(e *benchEnv) ([]string, int) { return []string{"create"}, 30 }},
	}
}

// editsAsAgent runs edits as the agent: in this process, or, with
// --uid, in this harness re-run with the agent's credentials.
func editsAsAgent(e *benchEnv, dir string) error {
	if e.agent == nil {
		return edits(e, dir)
	}
	cmd := exec.Command(e.self, "--edit-tree", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.agent}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("edits as uid %d: %v\n%s", e.agent.Uid, err, tail(string(out), 5))
	}
	return nil
}

// edits is what editors and sed -i do, 2,000 times: read a source file,
// write a temp file beside it, rename it over the original.
func edits(e *benchEnv, dir string) error {
	var files []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && strings.HasSuffix(p, ".go") && len(files) < 500 {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		return fmt.Errorf("no files to edit")
	}
	for i := range 2000 {
		f := files[i%len(files)]
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		b = append(b, fmt.Sprintf("// edit %d\n", i)...)
		tmp := f + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, f); err != nil {
			return err
		}
	}
	return nil
}

// prepareParallel makes the parallel workload's directories, one per
// concurrent agent, in the source before it is mounted.
func prepareParallel(e *benchEnv, src string) error {
	if e.parallel < 1 {
		return fmt.Errorf("--parallel %d: need at least 1", e.parallel)
	}
	for i := range e.parallel {
		if err := os.Mkdir(filepath.Join(src, fmt.Sprintf("agent%d", i)), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// parallelPhases are agents working at once, each in its own directory:
// --parallel untars, then as many searches of those trees, then as many
// rm -rf. Compared with native's and the loopback's same N, they show
// what the daemon serialises.
func parallelPhases() []phase {
	each := func(script func(e *benchEnv) string) func(e *benchEnv, dir string) error {
		return func(e *benchEnv, dir string) error {
			errs := make(chan error, e.parallel)
			for i := range e.parallel {
				go func() { errs <- e.sh(filepath.Join(dir, fmt.Sprintf("agent%d", i)), script(e)) }()
			}
			var first error
			for range e.parallel {
				if err := <-errs; err != nil && first == nil {
					first = err
				}
			}
			return first
		}
	}
	return []phase{
		{"par-untar", each(func(e *benchEnv) string { return "tar -xf " + e.corpusTar })},
		{"par-search", each(func(*benchEnv) string { return "grep -rnI 'func New' src >/dev/null" })},
		{"par-rm", each(func(*benchEnv) string { return "rm -rf src" })},
	}
}

// prepareCorpus tars $(go env GOROOT)/src (or a subdirectory of it) as a
// directory named "src", and counts its regular files.
func prepareCorpus(dir, sub string) (string, int, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", 0, fmt.Errorf("finding the Go tree for the corpus (go env GOROOT): %w", err)
	}
	goroot := strings.TrimSpace(string(out))
	base := filepath.Join(goroot, "src", sub)
	name := "corpus"
	if sub != "" {
		name += "-" + strings.ReplaceAll(sub, "/", "-")
	}
	tarPath := filepath.Join(dir, name+".tar")
	files := 0
	filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			files++
		}
		return nil
	})
	if _, err := os.Stat(tarPath); err == nil {
		return tarPath, files, nil
	}
	// --transform puts everything under "src/" whatever the subdirectory.
	cmd := exec.Command("tar", "-cf", tarPath, "-C", base, "--transform", "s,^\\.,src,", ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("making the corpus: %v %s", err, out)
	}
	return tarPath, files, nil
}

// timed runs fn and returns its wall time.
func timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}
