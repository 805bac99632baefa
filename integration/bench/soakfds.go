package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The daemon's open descriptors are not judged by their trend during the
// work: each node the kernel knows caches a descriptor of its source
// (a directory's O_PATH handle, a file's read descriptor; see
// fsnode/dircache.go), bounded only by a quarter of the descriptor limit,
// so the count follows the trees in flight (100 to 250 in a soak of
// seconds) and no allowance on it tells a leak from a busy moment.
//
// What a leak is instead: a descriptor that nothing accounts for once
// the work has stopped. A descriptor of a path that still exists in the
// source is a cache entry of a node the kernel still knows (at most
// cachedPerPath of them per path); every other one (a deleted path, a
// second handle of the same path, a pipe or socket) must be gone, back
// to what the daemon held before the work, once the sessions have ended
// and the kernel has forgotten the nodes of what was removed. Except the
// handles of its process cache (a pidfd and a /proc/PID directory per
// process that called, see internal/procinfo), which holds exited
// processes until it next sweeps: they count up to that cache's own
// bound.

const (
	// cachedPerPath is how many cached descriptors one node may hold: its
	// directory handle or its read descriptor, and, while it is being
	// written, the writer's.
	cachedPerPath = 2
	// fdLeakSlack is how many unexplained descriptors the daemon may hold
	// after the work beyond those it held before (a ledger segment, a
	// watcher opened on first use); a leak of one descriptor per
	// operation, over the soak's thousands of operations, exceeds it.
	fdLeakSlack = 16
	// spliceBound bounds the descriptors of go-fuse's splice pairs: two
	// per READ in flight, which the soak's callers bound.
	spliceBound = 2 * soakCallersAtOnce
	// fdSettleWait bounds the wait for the kernel's forgets after the
	// sessions end.
	fdSettleWait = 15 * time.Second
	// soakCallersAtOnce bounds the processes of the soak that are alive
	// at once, which a sweep of the process cache keeps: each session's
	// shell runs a pipeline, make, and a compiler's driver and passes,
	// and on a loaded machine they live longer, so more overlap (eight
	// per session were exceeded in CI: 35 handles over that bound, with
	// nothing else unexplained). A leak of a handle per process, over the
	// soak's thousands of processes, still exceeds this one.
	soakCallersAtOnce = soakSessions * 16
)

// fdCensus sorts a process's open descriptors.
type fdCensus struct {
	Total int `json:"total"`
	// Cached counts the descriptors of paths that exist below the source,
	// at most cachedPerPath per path: what the node caches may hold.
	Cached int `json:"cached_of_live_paths"`
	// Processes counts pidfds and /proc/PID handles; ProcessBound is how
	// many of them the process cache may hold.
	Processes    int `json:"process_handles"`
	ProcessBound int `json:"process_handle_bound"`
	// SplicePipes counts the pipes both of whose ends the daemon holds:
	// go-fuse's pool of splice pairs, kept for replies to READ, which
	// grows to the READs in flight at once and is never emptied; they
	// count up to spliceBound.
	SplicePipes int `json:"splice_pipes"`
	// Other counts the rest by kind, for the report.
	Other map[string]int `json:"other,omitempty"`
}

// OtherText is Other as text, the most frequent kind first.
func (c fdCensus) OtherText() string {
	kinds := make([]string, 0, len(c.Other))
	for k := range c.Other {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if c.Other[kinds[i]] != c.Other[kinds[j]] {
			return c.Other[kinds[i]] > c.Other[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ×%d", k, c.Other[k])
	}
	return strings.Join(parts, ", ")
}

// fdKind names what a descriptor target below or beside src is, for the
// report: pipes and sockets without their inode numbers, paths of the
// source by what became of them.
func fdKind(t, src string, live bool) string {
	if strings.HasPrefix(t, "pipe:") {
		if _, to, ok := strings.Cut(t, " to "); ok {
			return "pipe to " + strconv.Quote(to)
		}
		return "pipe with one end"
	}
	if strings.HasPrefix(t, "socket:") {
		return "socket"
	}
	if t != src && !strings.HasPrefix(t, src+"/") {
		return strconv.Quote(t)
	}
	switch {
	case strings.HasSuffix(t, " (deleted)"):
		return "a deleted file of the source"
	case live:
		return "a further handle of a live path of the source"
	}
	return "a path gone from the source"
}

// Unexplained is how many descriptors are neither cache entries of live
// paths nor process handles within the process cache's bound.
func (c fdCensus) Unexplained() int {
	return c.Total - c.Cached - min(c.Processes, c.ProcessBound) - min(c.SplicePipes, spliceBound)
}

// takeFdCensus reads pid's descriptors and sorts them by what they point
// at, src being the source directory the daemon serves and procBound the
// bound of its process cache's handles.
func takeFdCensus(pid int, src string, procBound int) (fdCensus, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fdCensus{}, fmt.Errorf("reading the daemon's descriptors: %w", err)
	}
	// The links read resolved paths.
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	targets := make([]string, 0, len(ents))
	for _, e := range ents {
		t, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		targets = append(targets, t)
	}
	pipeEnds(pid, targets)
	return censusOf(targets, src, procBound, func(p string) bool {
		_, err := os.Lstat(p)
		return err == nil
	}), nil
}

// pipeEnds names, in targets, the processes that hold the other ends of
// the daemon's pipes ("pipe:[N] to git"): a pipe left after the work is a
// child still running, or one whose end the daemon never closed.
func pipeEnds(pid int, targets []string) {
	pipes := map[string][]int{}
	for i, t := range targets {
		if strings.HasPrefix(t, "pipe:") {
			pipes[t] = append(pipes[t], i)
		}
	}
	if len(pipes) == 0 {
		return
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		other, err := strconv.Atoi(p.Name())
		if err != nil || other == pid {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", other))
		for _, fd := range fds {
			t, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", other, fd.Name()))
			if err != nil {
				continue
			}
			idx, ok := pipes[t]
			if !ok {
				continue
			}
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", other))
			for _, i := range idx {
				if !strings.Contains(targets[i], " to ") {
					targets[i] += " to " + strings.TrimSpace(string(comm))
				}
			}
		}
	}
}

// censusOf sorts descriptor targets (as /proc/PID/fd's links read) below
// src, exists saying whether a path is still there.
func censusOf(targets []string, src string, procBound int, exists func(string) bool) fdCensus {
	c := fdCensus{Total: len(targets), ProcessBound: procBound}
	perPath := map[string]int{}
	ends := map[string]int{}
	for _, t := range targets {
		if strings.HasPrefix(t, "pipe:") {
			ends[t]++
		}
	}
	for _, t := range targets {
		if ends[t] >= 2 {
			c.SplicePipes++
			continue
		}
		if isProcessHandle(t) {
			c.Processes++
			continue
		}
		live := (t == src || strings.HasPrefix(t, src+"/")) && !strings.HasSuffix(t, " (deleted)") && exists(t)
		if live && perPath[t] < cachedPerPath {
			perPath[t]++
			c.Cached++
			continue
		}
		if c.Other == nil {
			c.Other = map[string]int{}
		}
		c.Other[fdKind(t, src, live)]++
	}
	return c
}

// isProcessHandle says whether a descriptor's target is a pidfd or a
// process's /proc directory, live or gone.
func isProcessHandle(t string) bool {
	if t == "anon_inode:[pidfd]" {
		return true
	}
	pid, ok := strings.CutPrefix(strings.TrimSuffix(t, " (deleted)"), "/proc/")
	_, err := strconv.ParseUint(pid, 10, 32)
	return ok && err == nil
}

// fdVerdict is the judgement of the daemon's descriptors.
type fdVerdict struct {
	Before  fdCensus `json:"before"`
	Settled fdCensus `json:"settled"`
	Allowed int      `json:"allowed_unexplained_growth"`
	// Verdict is "flat" or "leaking".
	Verdict string `json:"verdict"`
}

// judgeFds compares the descriptors the daemon holds once the work has
// settled with those it held before it.
func judgeFds(before, settled fdCensus) fdVerdict {
	v := fdVerdict{Before: before, Settled: settled, Allowed: fdLeakSlack, Verdict: "flat"}
	if settled.Unexplained()-before.Unexplained() > fdLeakSlack {
		v.Verdict = "leaking"
	}
	return v
}

// settledFds waits, up to fdSettleWait, for the daemon's unexplained
// descriptors to come back within the allowance over before (the kernel
// forgets the nodes of removed trees a while after they are removed),
// and judges the last census taken.
func settledFds(pid int, src string, before fdCensus) (fdVerdict, error) {
	deadline := time.Now().Add(fdSettleWait)
	for {
		c, err := takeFdCensus(pid, src, before.ProcessBound)
		if err != nil {
			return fdVerdict{}, err
		}
		v := judgeFds(before, c)
		if v.Verdict == "flat" || time.Now().After(deadline) {
			return v, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}
