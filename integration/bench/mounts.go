package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// A mode is one way of reaching the files: the directory itself, a plain
// go-fuse loopback, intentfs, or bindfs.
type mode string

const (
	modeNative   mode = "native"
	modeLoopback mode = "loopback"
	modeIntentfs mode = "intentfs"
	// modeIntentfsURing is intentfs served over io_uring (--transport uring).
	modeIntentfsURing mode = "intentfs-uring"
	// modeIntentfsCached is intentfs on the cached data path
	// (--data-path cached), over /dev/fuse.
	modeIntentfsCached mode = "intentfs-cached"
	// modeIntentfsCachedURing is the cached data path over io_uring: what
	// is left of a cached search is round trips, which io_uring makes
	// cheaper.
	modeIntentfsCachedURing mode = "intentfs-cached-uring"
	// modeIntentfsBase is intentfs built from another revision (--base-rev
	// or --base-bin), over /dev/fuse: the "before" of a change, measured
	// in the same run, under the same load, as the "after".
	modeIntentfsBase mode = "intentfs-base"
	modeBindfs       mode = "bindfs"
)

// mounted is a mount under test.
type mounted struct {
	dir  string // where the workload runs
	pid  int    // the serving process, 0 for native
	stop func() error
}

// serveLoopback is the hidden --serve-loopback mode: a plain go-fuse
// loopback with the mount options intentfs uses, in its own process.
func serveLoopback(src, mnt string) {
	root, err := fs.NewLoopbackRoot(src)
	if err != nil {
		fail(err)
	}
	second := time.Second
	isRoot := os.Geteuid() == 0
	opts := &fs.Options{EntryTimeout: &second, AttrTimeout: &second, NegativeTimeout: &second, NullPermissions: true,
		MountOptions: fuse.MountOptions{AllowOther: isRoot, Options: []string{"default_permissions"}, FsName: src, Name: "loopback",
			DirectMount: isRoot, EnableLocks: true, ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC}}
	syscall.Umask(0)
	server, err := fs.Mount(mnt, root, opts)
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; server.Unmount() }()
	server.Wait()
}

// isIntentfs reports whether m is an intentfs mount, over either
// transport or built from the base revision.
func isIntentfs(m mode) bool {
	return m == modeIntentfs || m == modeIntentfsURing || m == modeIntentfsBase || m == modeIntentfsCached || m == modeIntentfsCachedURing
}

// mount makes the mode's view of src at mnt.
func mount(m mode, bin, self, src, mnt string) (*mounted, error) {
	switch m {
	case modeNative:
		return &mounted{dir: src, stop: func() error { return nil }}, nil
	case modeLoopback:
		cmd := exec.Command(self, "--serve-loopback", src, mnt)
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			cmd.Process.Kill()
			return nil, fmt.Errorf("loopback did not start")
		}
		return &mounted{dir: mnt, pid: cmd.Process.Pid, stop: func() error {
			cmd.Process.Signal(syscall.SIGTERM)
			return cmd.Wait()
		}}, nil
	case modeIntentfs, modeIntentfsURing, modeIntentfsBase, modeIntentfsCached, modeIntentfsCachedURing:
		transport := "dev"
		if m == modeIntentfsURing || m == modeIntentfsCachedURing {
			transport = "uring"
		}
		args := []string{"mount", "--foreground", "--intent", "INT-001", "--transport", transport}
		if m == modeIntentfsCached || m == modeIntentfsCachedURing {
			args = append(args, "--data-path", "cached")
		}
		cmd := exec.Command(bin, append(args, src, mnt)...)
		cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+filepath.Join(filepath.Dir(mnt), "run"))
		if p := os.Getenv("BENCH_PROFILE_DIR"); p != "" {
			// Named by mode and time, so the base's profiles and this
			// tree's of one run can be told apart.
			stem := filepath.Join(p, fmt.Sprintf("%s-%d", m, time.Now().UnixNano()))
			cmd.Env = append(cmd.Env, "INTENTFS_CPUPROFILE="+stem+".prof", "INTENTFS_BLOCKPROFILE="+stem+".block",
				"INTENTFS_MUTEXPROFILE="+stem+".mutex")
		}
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = nil
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if !strings.HasPrefix(line, "mounted") {
			cmd.Process.Kill()
			return nil, fmt.Errorf("intentfs did not start: %q", line)
		}
		return &mounted{dir: mnt, pid: cmd.Process.Pid, stop: func() error {
			cmd.Process.Signal(syscall.SIGTERM)
			return cmd.Wait()
		}}, nil
	case modeBindfs:
		if out, err := exec.Command("bindfs", "--no-allow-other", src, mnt).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("bindfs: %v %s", err, out)
		}
		pid := 0
		if out, err := exec.Command("pgrep", "-n", "bindfs").Output(); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
		}
		return &mounted{dir: mnt, pid: pid, stop: func() error {
			return exec.Command("fusermount3", "-u", mnt).Run()
		}}, nil
	}
	return nil, fmt.Errorf("unknown mode %s", m)
}

// procUsage reads a process's peak RSS (MB) and CPU time (s) from /proc.
func procUsage(pid int) (float64, float64) {
	if pid == 0 {
		return 0, 0
	}
	var rss float64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				rss = kb / 1024
			}
		}
	}
	var cpu float64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+2:])
			if len(f) > 13 {
				u, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				cpu = (u + st) / 100 // USER_HZ
			}
		}
	}
	return rss, cpu
}
