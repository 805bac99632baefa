package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// The workloads agents run most: searching a tree, installing a
// project's packages, and a parallel C build. Each needs something from
// outside the repository (a tool, a package cache, a source tarball);
// setup finds or fills it once, in the cache directory, and a workload
// whose prerequisite cannot be had is skipped with the reason, never
// failed.

// npmProject is the pinned project the npm workload installs: its
// package.json and package-lock.json, so every run installs the same 257
// packages.
const npmProject = "integration/bench/testdata/npm"

// cSourcePackage is the Debian source package the make workload builds:
// Lua, a real C project built by a plain Makefile (no configure step
// that could write absolute source paths into the tree).
const cSourcePackage = "lua5.4"

// errSkip marks a prerequisite that is missing: the workload is skipped.
type errSkip struct{ reason string }

func (e errSkip) Error() string { return e.reason }

func skip(format string, args ...any) error { return errSkip{fmt.Sprintf(format, args...)} }

// setupSearch needs only grep.
func setupSearch(env *benchEnv) error {
	if _, err := exec.LookPath("grep"); err != nil {
		return skip("grep is not installed")
	}
	return nil
}

// search is what agents do most: grep -rn over a source tree. The first
// pass after mounting meets an empty kernel cache; the second is the
// first warm one, and the third what agents repeat all session: through
// FUSE they differ, because the kernel marks a file's atime stale when it
// reads the file's data, so the first stat of each file after its first
// read is a GETATTR (grep fstats every file it opens) and only later
// passes are answered from the kernel's caches alone.
func searchPhases() []phase {
	grep := func(e *benchEnv, dir string) error {
		// -I skips binary files, as agents' search tools do. Exit 1 (no
		// match) would be a broken corpus: the pattern is everywhere.
		return e.sh(dir, "grep -rnI 'func New' src >/dev/null")
	}
	// A stat and readdir storm, as a build tool's or an agent's "what
	// changed" scan does: five walks of the tree comparing times.
	find := func(e *benchEnv, dir string) error {
		return e.sh(dir, "for i in 1 2 3 4 5; do find src -newer src >/dev/null || exit 1; done")
	}
	return []phase{{"search-cold", grep}, {"search-warm", grep}, {"search-warm-2", grep}, {"find-newer", find}}
}

// setupNpm checks for npm and fills the package cache once, online,
// from the pinned lock file; every measured run installs offline from it.
func setupNpm(env *benchEnv) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return skip("npm is not installed (apt-get install npm)")
	}
	env.npmCache = filepath.Join(env.cache, "npm")
	stamp := filepath.Join(env.npmCache, "filled-"+lockDigest(env))
	if _, err := os.Stat(stamp); err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "npm: filling the package cache %s once (npm ci online)…\n", env.npmCache)
	tmp, err := os.MkdirTemp("", "intentfs-bench-npm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := copyProject(env, tmp); err != nil {
		return err
	}
	if err := sh(tmp, "npm ci --ignore-scripts --no-audit --no-fund --cache "+shellQuote(env.npmCache)); err != nil {
		return skip("npm could not fill its cache from the registry (%v); run the harness once where the registry is reachable", firstLine(err))
	}
	return os.WriteFile(stamp, nil, 0o644)
}

// lockDigest names the cache fill after the lock file's size, so a
// changed lock refills it.
func lockDigest(env *benchEnv) string {
	st, err := os.Stat(filepath.Join(env.repo, npmProject, "package-lock.json"))
	if err != nil {
		return "none"
	}
	return strconv.FormatInt(st.Size(), 10)
}

func copyProject(env *benchEnv, dst string) error {
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(env.repo, npmProject, f))
		if err != nil {
			return fmt.Errorf("the npm workload's project: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func npmPhases() []phase {
	return []phase{{"npm-ci", func(e *benchEnv, dir string) error {
		return e.sh(dir, "npm ci --offline --ignore-scripts --no-audit --no-fund --cache "+shellQuote(e.npmCache))
	}}}
}

// setupMake checks for a C toolchain and fetches the C project's
// source once with apt-get source, through a private list of Debian
// source archives kept in the cache (the system's apt setup is not
// touched).
func setupMake(env *benchEnv) error {
	for _, tool := range []string{"make", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return skip("%s is not installed (apt-get install build-essential)", tool)
		}
	}
	dir := filepath.Join(env.cache, "c-src")
	if tb := findOrig(dir); tb != "" {
		env.cTarball = tb
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return skip("apt-get is not installed to fetch the %s source; put its .orig.tar.gz in %s", cSourcePackage, dir)
	}
	fmt.Fprintf(os.Stderr, "make: fetching the %s source once into %s (apt-get source)…\n", cSourcePackage, dir)
	lists := filepath.Join(dir, "lists")
	if err := os.MkdirAll(filepath.Join(lists, "partial"), 0o755); err != nil {
		return err
	}
	// The machine's own Debian archives, as source archives, in a list
	// of the cache's: the system's apt setup is not touched.
	parts := filepath.Join(dir, "sources.list.d")
	if err := debSrcLists(parts); err != nil {
		return skip("%v; put the %s .orig.tar.gz in %s", err, cSourcePackage, dir)
	}
	apt := "apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=" + shellQuote(parts) + " -o Dir::State::Lists=" + shellQuote(lists)
	if err := sh(dir, apt+" update && "+apt+" source --download-only "+cSourcePackage); err != nil {
		return skip("could not fetch the %s source (%v); put its .orig.tar.gz in %s", cSourcePackage, firstLine(err), dir)
	}
	if env.cTarball = findOrig(dir); env.cTarball == "" {
		return skip("apt-get source left no %s .orig.tar.* in %s", cSourcePackage, dir)
	}
	return nil
}

func findOrig(dir string) string {
	m, _ := filepath.Glob(filepath.Join(dir, cSourcePackage+"_*.orig.tar.*"))
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}

// debSrcLists writes into dir the machine's apt sources turned into
// source archives: deb822 files with "Types: deb-src", one-line lists
// with "deb-src" lines.
func debSrcLists(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	files = append(files, "/etc/apt/sources.list")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(l, "Types:"):
				l = "Types: deb-src"
			case strings.HasPrefix(l, "deb "):
				l = "deb-src " + strings.TrimPrefix(l, "deb ")
			case strings.HasPrefix(strings.TrimSpace(l), "#"):
				continue // a blank line instead would split a deb822 stanza
			}
			out = append(out, l)
		}
		name := filepath.Base(f)
		if !strings.HasSuffix(name, ".sources") && !strings.HasSuffix(name, ".list") {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(out, "\n")), 0o644); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("no apt sources in /etc/apt to fetch source packages from")
	}
	return nil
}

// makePhases builds Lua (about 35 C files and two programs) with one job
// per core, as a build agent would.
func makePhases() []phase {
	return []phase{{"make-j", func(e *benchEnv, dir string) error {
		return e.sh(filepath.Join(dir, "c"), "make -j"+strconv.Itoa(runtime.NumCPU())+" linux >/dev/null && test -x src/lua")
	}}}
}

func prepareMake(e *benchEnv, src string) error {
	if err := os.MkdirAll(filepath.Join(src, "c"), 0o755); err != nil {
		return err
	}
	return sh(filepath.Join(src, "c"), "tar --strip-components=1 -xf "+shellQuote(e.cTarball))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
