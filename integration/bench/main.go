// Command bench is intentfs's benchmark harness: it runs file-tree and
// ledger workloads against the native directory, a plain go-fuse loopback
// mount and intentfs in one run, interleaved and repeated, and reports
// medians and ratios. See docs/performance.md.
//
//	go run ./integration/bench [--workloads untar,rm,...] [--reps 5] [--json FILE]
//	sudo go run ./integration/bench --soak 2m     # the soak alone (soak.go)
//
// search, npm and make need grep, npm and a C toolchain; npm's package
// cache and the C project's source are fetched once into --cache.
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "--serve-loopback" {
		serveLoopback(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "--edit-tree" {
		// The edit phase, re-run as the agent (--uid).
		if err := edits(nil, os.Args[2]); err != nil {
			fail(err)
		}
		return
	}
	workloads := pflag.StringSlice("workloads", []string{"untar", "rm", "git", "build", "stream", "edit", "search", "npm", "make", "ledger"},
		"workloads to run: untar, rm, git, build, stream, edit, search, npm, make, parallel, ledger, soak")
	soakFor := pflag.Duration("soak", 2*time.Minute, "how long the soak runs: four intentfs run sessions working in parallel (with --workloads soak; given alone, runs the soak alone)")
	records := pflag.Int("ledger-records", 1_000_000, "records in the generated ledger")
	reps := pflag.Int("reps", 5, "repetitions of each file-tree workload per mode (after one warm-up); 0: only the warm-up, for request counts")
	corpus := pflag.String("corpus", "", "subdirectory of $(go env GOROOT)/src to use as the corpus (default: all of it)")
	gitCorpus := pflag.String("git-corpus", "net", "subdirectory of $(go env GOROOT)/src for the git and edit workloads")
	storage := pflag.StringSlice("storage", []string{"tmpfs", "disk"}, "where sources live: tmpfs (/dev/shm) and/or disk (--workdir)")
	bindfs := pflag.Bool("bindfs", true, "include bindfs as a comparison when it is installed")
	modeNames := pflag.StringSlice("modes", []string{"native", "loopback", "intentfs"}, "ways of reaching the files to compare: native, loopback, intentfs, intentfs-uring (intentfs over FUSE over io_uring), intentfs-cached (intentfs with --data-path cached), intentfs-cached-uring (the cached data path over io_uring), intentfs-base (intentfs built from --base-rev or --base-bin), bindfs (with --reps 0 --modes intentfs: request counts alone, quickly)")
	baseRev := pflag.String("base-rev", "", "git revision to build the intentfs-base mode from (e.g. main, a commit): its 'before' runs interleaved with this tree's 'after'")
	baseBin := pflag.String("base-bin", "", "an intentfs binary to run as the intentfs-base mode, instead of building --base-rev")
	parallel := pflag.Int("parallel", 4, "concurrent trees in the parallel workload")
	uid := pflag.Int("uid", -1, "run the timed phases as this uid (and gid), as an unprivileged agent does, on sources it owns (needs root)")
	jsonOut := pflag.String("json", "", "also write the results as JSON to this file")
	workdir := pflag.String("workdir", "", "scratch directory on the disk (default: a temporary one)")
	cacheDir := pflag.String("cache", defaultCache(), "kept between runs: the npm package cache and the C project's source, filled on first use")
	pflag.Parse()
	if pflag.CommandLine.Changed("soak") && !pflag.CommandLine.Changed("workloads") {
		*workloads = []string{"soak"}
	}

	dir := *workdir
	if dir == "" {
		d, err := os.MkdirTemp("", "intentfs-bench-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	bin := filepath.Join(dir, "intentfs")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/intentfs").CombinedOutput(); err != nil {
		fail(fmt.Errorf("building intentfs (run from the repository root): %v\n%s", err, out))
	}
	results := map[string]any{}
	self, _ := os.Executable()
	var fileNames []string
	for _, w := range *workloads {
		if w != "ledger" && w != "soak" {
			fileNames = append(fileNames, w)
		}
	}
	env := &benchEnv{repo: mustCwd(), gocache: filepath.Join(dir, "gocache"), cache: *cacheDir, parallel: *parallel, self: self}
	if *uid >= 0 {
		if os.Geteuid() != 0 {
			fail(fmt.Errorf("--uid %d needs root: the harness gives each source to that uid", *uid))
		}
		env.agent = &syscall.Credential{Uid: uint32(*uid), Gid: uint32(*uid)}
		// The agent reads the corpus from the scratch directory, and
		// runs this harness's edit phase from a copy there (go run's
		// build directory is closed to it).
		if err := os.Chmod(dir, 0o755); err != nil {
			fail(err)
		}
		env.self = filepath.Join(dir, "bench-agent")
		if err := sh(dir, "cp "+shellQuote(self)+" "+shellQuote(env.self)+" && chmod 755 "+shellQuote(env.self)); err != nil {
			fail(err)
		}
	}
	if slices.Contains(*modeNames, string(modeIntentfsBase)) {
		var err error
		if env.baseBin, env.baseName, err = baseBinary(dir, *baseRev, *baseBin); err != nil {
			fail(err)
		}
	}
	fileNames = setupWorkloads(env, fileNames)
	if len(fileNames) > 0 {
		var err error
		if env.corpusTar, env.corpusFiles, err = prepareCorpus(dir, *corpus); err != nil {
			fail(err)
		}
		if env.gitTar, env.gitFiles, err = prepareCorpus(dir, *gitCorpus); err != nil {
			fail(err)
		}
		var modes []mode
		for _, m := range *modeNames {
			modes = append(modes, mode(m))
		}
		if _, err := exec.LookPath("bindfs"); err == nil && *bindfs {
			modes = append(modes, modeBindfs)
		}
		storages := map[string]string{}
		for _, s := range *storage {
			switch s {
			case "disk":
				storages["disk"] = dir
			case "tmpfs":
				shm, err := os.MkdirTemp("/dev/shm", "intentfs-bench-")
				if err != nil {
					fail(err)
				}
				defer os.RemoveAll(shm)
				if env.agent != nil {
					if err := os.Chmod(shm, 0o755); err != nil {
						fail(err)
					}
				}
				storages["tmpfs"] = shm
			}
		}
		fmt.Fprintf(os.Stderr, "corpus: %d files (%s); git/edit corpus: %d files; modes %v; %d reps after a warm-up; page cache warm; parallel workload: %d trees\n",
			env.corpusFiles, env.corpusTar, env.gitFiles, modes, *reps, env.parallel)
		res, err := runFileWorkloads(env, fileNames, modes, storages, *reps, bin, self)
		if len(res) > 0 {
			fmt.Print(report(res))
			if t := modeRatios(res, modeIntentfsURing, modeIntentfs); t != "" {
				fmt.Print("\nintentfs over io_uring ÷ over /dev/fuse (medians):\n" + t)
			}
			if t := modeRatios(res, modeIntentfsCached, modeIntentfs); t != "" {
				fmt.Print("\nintentfs on the cached data path ÷ on the passthrough path (medians):\n" + t)
			}
			if t := modeRatios(res, modeIntentfsCachedURing, modeIntentfsCached); t != "" {
				fmt.Print("\nintentfs on the cached data path, over io_uring ÷ over /dev/fuse (medians):\n" + t)
			}
			if t := modeRatios(res, modeIntentfs, modeIntentfsBase); t != "" {
				fmt.Printf("\nintentfs ÷ intentfs at %s (medians):\n%s", env.baseName, t)
			}
			results["file_workloads"] = res
		}
		// With --reps 0 only the warm-up runs: the request counts, which
		// do not depend on the machine's load, are still reported.
		if len(opsLog) > 0 {
			results["intentfs_fuse_requests"] = opsLog
			for _, w := range slices.Sorted(maps.Keys(opsLog)) {
				fmt.Printf("intentfs FUSE requests, %s: %v\n", w, opsLog[w])
			}
			for _, key := range []string{"stream", "stream/uring"} {
				if ops, ok := opsLog[key]; ok {
					// Passthrough is checked, not assumed: the data of 1 GiB
					// written and read must not have reached the daemon, as
					// WRITE or as WRITEV (go-fuse's write with its data in
					// place).
					writes := ops["WRITE"] + ops["WRITEV"]
					fmt.Printf("kernel passthrough during %s: %v (READ requests %d, WRITE and WRITEV requests %d)\n",
						key, ops["READ"] == 0 && writes == 0, ops["READ"], writes)
				}
			}
		}
		if err != nil {
			fail(err)
		}
	}
	for _, w := range *workloads {
		switch w {
		case "untar", "rm", "git", "build", "stream", "edit", "search", "npm", "make", "parallel":
		case "ledger":
			fmt.Fprintf(os.Stderr, "ledger: generating %d records…\n", *records)
			r, err := runLedger(bin, *records, dir)
			if err != nil {
				fail(err)
			}
			results["ledger"] = r
			fmt.Printf("ledger: %d records (%.0f MB): %.0f appends/s; log --intent (table): %.2fs; log --intent --json (all %d matches): %.2fs; verify: %.2fs (ok=%v, %d files hashed)\n",
				r.Records, float64(r.LedgerBytes)/1e6, r.AppendsPerSec, r.LogTableSec, r.LogMatches, r.LogQuerySec, r.VerifySec, r.VerifyOK, r.TrackedFiles)
		case "soak":
			r, err := runSoak(bin, *soakFor)
			if r != nil {
				results["soak"] = r
			}
			if err != nil {
				fail(err)
			}
		default:
			fail(fmt.Errorf("unknown workload %q", w))
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fail(err)
		}
	}
}

// setupWorkloads runs each named workload's setup and returns the names
// of those that can run; the others are skipped with their reason.
func setupWorkloads(env *benchEnv, names []string) []string {
	var run []string
	for _, w := range workloads() {
		if !slices.Contains(names, w.name) {
			continue
		}
		if w.setup != nil {
			if err := w.setup(env); err != nil {
				fmt.Fprintf(os.Stderr, "bench: skipping %s: %v\n", w.name, err)
				continue
			}
		}
		run = append(run, w.name)
	}
	return run
}

// baseBinary returns the binary of the intentfs-base mode and a name for
// it: bin as given, or intentfs built from rev (exported with git archive
// into dir, so no worktree is left behind).
func baseBinary(dir, rev, bin string) (string, string, error) {
	switch {
	case bin != "" && rev != "":
		return "", "", fmt.Errorf("give --base-rev or --base-bin, not both")
	case bin != "":
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", "", fmt.Errorf("--base-bin %s: %w", bin, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", "", fmt.Errorf("--base-bin: %w", err)
		}
		return abs, filepath.Base(abs), nil
	case rev == "":
		return "", "", fmt.Errorf("the intentfs-base mode needs --base-rev REV (a git revision to build) or --base-bin FILE")
	}
	out, err := exec.Command("git", "rev-parse", "--short", "--verify", rev+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("--base-rev %s is not a commit of this repository: %w", rev, err)
	}
	commit := strings.TrimSpace(string(out))
	tree := filepath.Join(dir, "base-"+commit)
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return "", "", err
	}
	if out, err := exec.Command("sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", commit, tree).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("exporting %s: %v\n%s", commit, err, out)
	}
	binPath := filepath.Join(dir, "intentfs-"+commit)
	cmd := exec.Command("go", "build", "-o", binPath, "./cmd/intentfs")
	cmd.Dir = tree
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building intentfs at %s: %v\n%s", commit, err, out)
	}
	return binPath, commit, nil
}

// defaultCache is where downloads are kept between runs: the user's
// cache directory, or the temporary directory.
func defaultCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "intentfs-bench")
	}
	return filepath.Join(os.TempDir(), "intentfs-bench-cache")
}

func mustCwd() string {
	d, err := os.Getwd()
	if err != nil {
		fail(err)
	}
	return d
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
