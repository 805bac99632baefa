package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/internal/procinfo"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
)

// The soak: four agent sessions (intentfs run, each pinned to an intent
// of its own, as an unprivileged user) edit, build, extract and delete
// trees and read each other's files in parallel for a bounded time, and
// now and then try something outside their scope. Meanwhile the daemon's
// RSS and descriptors are sampled; they must stay flat. At the end the
// mount is unmounted, `intentfs verify --source` must pass, and the
// ledger must account for every session.

const (
	soakSessions = 4
	// soakUID is the agents' user.
	soakUID = 1000
	// soakGrace is how long past its duration a session may run before
	// it is killed: an iteration in progress finishes, a hung one does
	// not hold the soak.
	soakGrace = 60 * time.Second
	// soakStopWait bounds each wait in the teardown.
	soakStopWait = 30 * time.Second
)

// soakSession is what one session did, as it counted itself, as the
// daemon counted it, and as the ledger holds it.
type soakSession struct {
	Name   string `json:"name"`
	Intent string `json:"intent"`
	ID     string `json:"id"`
	// Counted by the session's own script.
	Iterations int `json:"iterations"`
	Edits      int `json:"edits"`
	Builds     int `json:"builds"`
	Trees      int `json:"trees"`
	Reads      int `json:"reads"`
	Tries      int `json:"out_of_scope_tries"`
	Refused    int `json:"out_of_scope_refused"`
	Leaks      int `json:"out_of_scope_leaks"`
	// Counted by the daemon (intentfs sessions).
	DaemonChanges uint64 `json:"daemon_changes"`
	DaemonDenials uint64 `json:"daemon_denials"`
	// Found in the ledger: session_start and session_end records, change
	// records, denials (a summary record counts the denials it stands
	// for), and change records outside the session's scope (must be 0).
	Starts       int    `json:"ledger_session_starts"`
	Ends         int    `json:"ledger_session_ends"`
	Changes      int    `json:"ledger_changes"`
	Denials      int    `json:"ledger_denials"`
	OutsideScope int    `json:"ledger_changes_outside_scope"`
	OutputTail   string `json:"-"`
	dir          string
}

// soakResult is the soak's report.
type soakResult struct {
	DurationSec   float64           `json:"duration_sec"`
	Sessions      []*soakSession    `json:"sessions"`
	Samples       []procSample      `json:"daemon_samples"`
	RSSMB         trend             `json:"daemon_rss_mb"`
	FDs           trend             `json:"daemon_fds"`
	FDLeak        fdVerdict         `json:"daemon_fd_leak"`
	Threads       trend             `json:"daemon_threads"`
	FUSERequests  map[string]uint64 `json:"fuse_requests"`
	LedgerRecords int               `json:"ledger_records"`
	LedgerBytes   int64             `json:"ledger_bytes"`
	LedgerFiles   int               `json:"ledger_files"`
	VerifyOK      bool              `json:"verify_ok"`
	VerifySec     float64           `json:"verify_sec"`
	Problems      []string          `json:"problems,omitempty"`
}

// runSoak runs the soak for d with the intentfs binary bin, prints its
// report, and returns an error if anything failed or grew. It stops by
// itself; on SIGINT or SIGTERM, or when a session fails, it ends the
// sessions, unmounts and reports.
func runSoak(bin string, d time.Duration) (*soakResult, error) {
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	if os.Geteuid() != 0 {
		return nil, errors.New("the soak needs root: intentfs run makes the sessions' namespaces (run it with sudo)")
	}
	for _, tool := range []string{"cc", "make", "tar", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the soak's sessions build and edit with %s, which is not installed", tool)
		}
	}
	gid := soakUID
	if u, err := user.LookupId(strconv.Itoa(soakUID)); err == nil {
		gid, _ = strconv.Atoi(u.Gid)
	}
	root, err := os.MkdirTemp("", "intentfs-soak-")
	if err != nil {
		return nil, err
	}
	// The agents' user must reach the mount below it.
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, err
	}
	src, mnt, run := filepath.Join(root, "src"), filepath.Join(root, "mnt"), filepath.Join(root, "run")
	kept := true
	defer func() {
		if kept {
			fmt.Fprintf(os.Stderr, "soak: left %s for inspection (daemon log: %s)\n", root, filepath.Join(root, "daemon.log"))
		} else {
			os.RemoveAll(root)
		}
	}()
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, err
	}
	if err := prepareSoakSource(src, soakSessions); err != nil {
		return nil, fmt.Errorf("preparing the soak's workspace: %w", err)
	}
	if err := chownTree(src, soakUID, gid); err != nil {
		return nil, err
	}
	dm, err := startSoakDaemon(bin, src, mnt, run, filepath.Join(root, "daemon.log"))
	if err != nil {
		return nil, err
	}
	defer dm.stop()

	res := &soakResult{}
	fdsBefore, err := takeFdCensus(dm.pid, src, procinfo.HandleBound(soakCallersAtOnce))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "soak: %d sessions as uid %d for %s on %s (daemon pid %d)\n", soakSessions, soakUID, d, mnt, dm.pid)
	start := time.Now()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	samples := make(chan []procSample, 1)
	go func() { samples <- sampleProc(sampleCtx, dm.pid, sampleInterval(d)) }()
	sessErr := runSoakSessions(ctx, bin, mnt, run, d, res)
	stopSampling()
	res.Samples = <-samples
	res.DurationSec = time.Since(start).Seconds()
	res.RSSMB, res.FDs = daemonTrends(res.Samples, d)
	res.Threads = threadTrend(res.Samples, d)
	interrupted := ctx.Err() != nil
	if interrupted {
		res.problem("interrupted (%v): the sessions were ended and the workspace unmounted", context.Cause(ctx))
	} else {
		if sessErr != nil {
			res.problem("%v", sessErr)
		}
		res.collectDaemonCounts(bin, mnt, run)
		if res.FDLeak, err = settledFds(dm.pid, src, fdsBefore); err != nil {
			res.problem("%v", err)
		}
	}
	if err := dm.stop(); err != nil {
		res.problem("unmounting: %v", err)
	}
	if !interrupted {
		t0 := time.Now()
		out, err := exec.Command(bin, "verify", "--source", src).CombinedOutput()
		res.VerifySec, res.VerifyOK = time.Since(t0).Seconds(), err == nil
		if err != nil {
			res.problem("intentfs verify --source: %v\n%s", err, tail(string(out), 8))
		}
		res.checkLedger(src)
		res.judge()
	}
	fmt.Print(res.report(d))
	if interrupted {
		return res, errors.New("soak interrupted")
	}
	if len(res.Problems) > 0 {
		return res, fmt.Errorf("soak failed: %s", strings.Join(res.Problems, "; "))
	}
	kept = false
	return res, nil
}

func (r *soakResult) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// runSoakSessions runs the sessions to their end, filling res.Sessions
// with what their scripts counted. A session that fails ends the others.
func runSoakSessions(ctx context.Context, bin, mnt, run string, d time.Duration, res *soakResult) error {
	ctx, cancel := context.WithTimeoutCause(ctx, d+soakGrace, errors.New("the sessions overran the soak's duration"))
	defer cancel()
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	end := strconv.FormatInt(time.Now().Add(d).Unix(), 10)
	var wg sync.WaitGroup
	errs := make([]error, soakSessions)
	for i := 1; i <= soakSessions; i++ {
		s := &soakSession{Name: fmt.Sprintf("soak-%d", i), Intent: soakIntent(i), dir: soakAgentDir(i)}
		res.Sessions = append(res.Sessions, s)
		other := soakAgentDir(i%soakSessions + 1)
		cmd := exec.CommandContext(ctx, bin, "run", "--mount", mnt, "--intent", s.Intent, "--user", strconv.Itoa(soakUID), "--name", s.Name,
			"--", "sh", "-c", soakScript, "soak", s.dir, other, end, s.Intent, strconv.Itoa(i))
		cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+run, "LC_ALL=C")
		cmd.Dir = mnt
		// Its own process group: a ^C reaches the harness, which ends
		// the sessions before it unmounts.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// intentfs run passes SIGTERM on to the command; if that does not
		// end it, SIGKILL ends intentfs run and with it the session.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		out := &tailBuffer{max: 64 << 10}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			fail(err)
			errs[i-1] = fmt.Errorf("starting %s: %w", s.Name, err)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			s.OutputTail = out.String()
			s.parseResult()
			if err != nil {
				errs[i-1] = fmt.Errorf("session %s: %w", s.Name, err)
				if ctx.Err() != nil {
					errs[i-1] = fmt.Errorf("%w (ended: %v)", errs[i-1], context.Cause(ctx))
				}
				if out := tail(s.OutputTail, 10); out != "" {
					errs[i-1] = fmt.Errorf("%w\n%s", errs[i-1], out)
				}
				fail(errs[i-1])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parseResult reads the counters of the script's soak-result line.
func (s *soakSession) parseResult() {
	for _, line := range strings.Split(s.OutputTail, "\n") {
		rest, ok := strings.CutPrefix(line, "soak-result ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(v)
			switch k {
			case "iterations":
				s.Iterations = n
			case "edits":
				s.Edits = n
			case "builds":
				s.Builds = n
			case "trees":
				s.Trees = n
			case "reads":
				s.Reads = n
			case "tries":
				s.Tries = n
			case "denied":
				s.Refused = n
			case "leaks":
				s.Leaks = n
			}
		}
	}
}

// collectDaemonCounts waits until the daemon has seen every session end,
// and takes its per-session counters and FUSE request counts.
func (r *soakResult) collectDaemonCounts(bin, mnt, run string) {
	cli := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+run)
		return cmd.Output()
	}
	var list []struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Live    bool   `json:"live"`
		Changes uint64 `json:"changes"`
		Denials uint64 `json:"denials"`
	}
	deadline := time.Now().Add(soakStopWait)
	for {
		list = list[:0]
		out, err := cli("sessions", "--mount", mnt, "--json")
		if err == nil {
			err = json.Unmarshal(out, &list)
		}
		ended := 0
		for _, l := range list {
			if !l.Live {
				ended++
			}
		}
		if err == nil && ended >= len(r.Sessions) {
			break
		}
		if time.Now().After(deadline) {
			r.problem("the daemon did not see every session end within %s (intentfs sessions: %v, %d ended)", soakStopWait, err, ended)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, s := range r.Sessions {
		for _, l := range list {
			if l.Name == s.Name {
				s.ID, s.DaemonChanges, s.DaemonDenials = l.ID, l.Changes, l.Denials
			}
		}
	}
	if out, err := cli("status", "--mount", mnt, "--json"); err == nil {
		var st struct {
			Ops map[string]uint64 `json:"fuse_requests"`
		}
		if json.Unmarshal(out, &st) == nil {
			r.FUSERequests = st.Ops
		}
	}
}

// checkLedger counts each session's records in the ledger.
func (r *soakResult) checkLedger(src string) {
	path := workspace.At(src).LedgerPath()
	files, _ := ledger.Files(path)
	r.LedgerFiles = len(files)
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			r.LedgerBytes += st.Size()
		}
	}
	byID := map[string]*soakSession{}
	for _, s := range r.Sessions {
		if s.ID != "" {
			byID[s.ID] = s
		}
	}
	err := ledger.Query(path, ledger.Filter{}, func(rec *ledger.Record) error {
		r.LedgerRecords++
		g := rec.Gov()
		if g.Session == nil {
			return nil
		}
		s := byID[g.Session.ID]
		if s == nil {
			return nil
		}
		switch g.Event {
		case ledger.EventSessionStart:
			s.Starts++
		case ledger.EventSessionEnd:
			s.Ends++
		case ledger.EventDenied:
			s.Denials += max(g.Repeats, 1)
		default:
			s.Changes++
			for _, p := range []string{rec.Path(), g.FromPath} {
				if p != "" && !strings.HasPrefix(p, s.dir+"/") {
					s.OutsideScope++
				}
			}
		}
		return nil
	})
	if err != nil {
		r.problem("reading the ledger: %v", err)
	}
}

// judge turns what was measured into problems.
func (r *soakResult) judge() {
	if r.RSSMB.Verdict == "growing" {
		r.problem("the daemon's RSS grew: %.1f MB → %.1f MB (medians after the warm-up; allowed +%.1f MB)", r.RSSMB.Start, r.RSSMB.End, r.RSSMB.Allowed)
	}
	if r.FDLeak.Verdict == "leaking" {
		r.problem("the daemon's open descriptors grew: %d not cache entries of live paths before the work, %d after it settled (allowed +%d; before: %s; after: %s)",
			r.FDLeak.Before.Unexplained(), r.FDLeak.Settled.Unexplained(), r.FDLeak.Allowed, r.FDLeak.Before.OtherText(), r.FDLeak.Settled.OtherText())
	}
	for _, s := range r.Sessions {
		switch {
		case s.Iterations == 0:
			r.problem("%s completed no iteration", s.Name)
		case s.Leaks > 0:
			r.problem("%s changed something outside its scope %d times", s.Name, s.Leaks)
		}
		if s.ID == "" {
			r.problem("%s: the daemon does not list it", s.Name)
			continue
		}
		if !r.VerifyOK {
			continue // the ledger was not read
		}
		if s.Starts != 1 || s.Ends != 1 {
			r.problem("%s: the ledger holds %d session_start and %d session_end records, want 1 each", s.Name, s.Starts, s.Ends)
		}
		if s.Changes == 0 {
			r.problem("%s: the ledger holds no change of it", s.Name)
		}
		if s.OutsideScope > 0 {
			r.problem("%s: the ledger holds %d changes of it outside %s/", s.Name, s.OutsideScope, s.dir)
		}
		// The ledger loses nothing: it holds every change and denial the
		// daemon counted for the session.
		if uint64(s.Changes) != s.DaemonChanges || uint64(s.Denials) != s.DaemonDenials {
			r.problem("%s: the ledger holds %d changes and %d denials of it, the daemon counted %d and %d", s.Name, s.Changes, s.Denials, s.DaemonChanges, s.DaemonDenials)
		}
		// Every refused try is at least one denial (touching a file can
		// be refused twice: the open, then the times).
		if s.Denials < s.Refused {
			r.problem("%s: the ledger counts %d denials of it, but it was refused %d times", s.Name, s.Denials, s.Refused)
		}
	}
}

// report prints the soak's results.
func (r *soakResult) report(d time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %d sessions, %s (ran %.1fs), %d daemon samples every %s\n", len(r.Sessions), d, r.DurationSec, len(r.Samples), sampleInterval(d).Round(time.Millisecond))
	fmt.Fprintf(&b, "%-7s %-8s %-8s %6s %6s %6s %6s %6s %6s %7s %8s %8s %9s %9s\n", "session", "id", "intent", "iters", "edits", "builds", "trees", "reads",
		"tries", "refused", "changes", "denials", "d.changes", "d.denials")
	for _, s := range r.Sessions {
		fmt.Fprintf(&b, "%-7s %-8s %-8s %6d %6d %6d %6d %6d %6d %7d %8d %8d %9d %9d\n", s.Name, s.ID, s.Intent, s.Iterations, s.Edits, s.Builds, s.Trees, s.Reads,
			s.Tries, s.Refused, s.Changes, s.Denials, s.DaemonChanges, s.DaemonDenials)
	}
	line := func(what, unit string, t trend) {
		fmt.Fprintf(&b, "daemon %s: first %.1f%s, last %.1f%s, max %.1f%s", what, t.First, unit, t.Last, unit, t.Max, unit)
		if t.Verdict != "too few samples" {
			fmt.Fprintf(&b, "; after the %.1fs warm-up, first-quarter median %.1f%s, last-quarter %.1f%s (allowed +%.1f%s)", warmUp(d).Seconds(), t.Start, unit, t.End, unit, t.Allowed, unit)
		}
		fmt.Fprintf(&b, ": %s\n", t.Verdict)
	}
	line("RSS", " MB", r.RSSMB)
	fmt.Fprintf(&b, "daemon open fds: first %.0f, last %.0f, max %.0f during the work (they follow the nodes the kernel knows)\n", r.FDs.First, r.FDs.Last, r.FDs.Max)
	fmt.Fprintf(&b, "daemon open fds not cached for a live path: %d before the work, %d after it settled (allowed +%d): %s\n",
		r.FDLeak.Before.Unexplained(), r.FDLeak.Settled.Unexplained(), r.FDLeak.Allowed, r.FDLeak.Verdict)
	fmt.Fprintf(&b, "daemon threads: first %.0f, last %.0f, max %.0f\n", r.Threads.First, r.Threads.Last, r.Threads.Max)
	if len(r.FUSERequests) > 0 {
		var total uint64
		names := make([]string, 0, len(r.FUSERequests))
		for k, v := range r.FUSERequests {
			total += v
			names = append(names, k)
		}
		slices.SortFunc(names, func(a, b string) int { return cmp.Compare(r.FUSERequests[b], r.FUSERequests[a]) })
		var top []string
		for _, k := range names[:min(6, len(names))] {
			top = append(top, fmt.Sprintf("%s %d", k, r.FUSERequests[k]))
		}
		fmt.Fprintf(&b, "FUSE requests: %d (%s)\n", total, strings.Join(top, ", "))
	}
	fmt.Fprintf(&b, "ledger: %d records, %.1f MB in %d file(s); verify --source: ok=%v in %.2fs\n", r.LedgerRecords, float64(r.LedgerBytes)/1e6, r.LedgerFiles, r.VerifyOK, r.VerifySec)
	if len(r.Problems) == 0 {
		b.WriteString("soak: PASS\n")
	} else {
		b.WriteString("soak: FAIL\n")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  - %s\n", p)
		}
	}
	return b.String()
}

// threadTrend reports the daemon's threads (informational: Go keeps the
// threads it made, so their count only says how busy the peak was).
func threadTrend(samples []procSample, d time.Duration) trend {
	var at, xs []float64
	for _, s := range samples {
		at, xs = append(at, s.AtSec), append(xs, float64(s.Threads))
	}
	return trendOf(at, xs, warmUp(d).Seconds(), 0)
}

// soakDaemon is the intentfs daemon the soak runs, in its own process.
type soakDaemon struct {
	cmd     *exec.Cmd
	pid     int
	mnt     string
	log     *os.File
	done    chan error
	stopped bool
	err     error
}

// startSoakDaemon mounts src at mnt with `intentfs mount --foreground`
// and returns once the mount is ready. Its log goes to logPath.
func startSoakDaemon(bin, src, mnt, run, logPath string) (*soakDaemon, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The data path is INTENTFS_DATA_PATH's, as the suite's.
	cmd := exec.Command(bin, "mount", "--foreground", src, mnt)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+run)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting intentfs mount: %w", err)
	}
	dm := &soakDaemon{cmd: cmd, pid: cmd.Process.Pid, mnt: mnt, log: logf, done: make(chan error, 1)}
	rd := bufio.NewReader(out)
	line, _ := rd.ReadString('\n')
	go func() {
		io.Copy(logf, rd) // the rest of its output, so it never blocks on a full pipe
		dm.done <- cmd.Wait()
	}()
	if !strings.HasPrefix(line, "mounted") {
		dm.stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("intentfs mount did not start: %q\n%s", line, tail(string(b), 10))
	}
	return dm, nil
}

// stop unmounts: SIGTERM (the daemon unmounts and closes its ledger),
// then, if it has not exited within soakStopWait, SIGKILL and a lazy
// unmount, so no path leaves the mount behind. It returns why the
// daemon did not stop cleanly; a second call returns the first's answer.
func (dm *soakDaemon) stop() error {
	if dm.stopped {
		return dm.err
	}
	dm.stopped = true
	defer dm.log.Close()
	dm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-dm.done:
		if err != nil {
			dm.err = fmt.Errorf("intentfs mount exited: %w", err)
		}
	case <-time.After(soakStopWait):
		dm.cmd.Process.Kill()
		<-dm.done
		dm.err = fmt.Errorf("intentfs mount did not exit within %s of SIGTERM; killed", soakStopWait)
	}
	if isMountpoint(dm.mnt) {
		if err := syscall.Unmount(dm.mnt, syscall.MNT_DETACH); err != nil {
			dm.err = errors.Join(dm.err, fmt.Errorf("lazy unmount of %s: %w", dm.mnt, err))
		} else if dm.err == nil {
			dm.err = fmt.Errorf("%s was still mounted after the daemon exited", dm.mnt)
		}
	}
	return dm.err
}

// isMountpoint reports whether dir is a mountpoint (its device differs from
// its parent's).
func isMountpoint(dir string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil {
		return true // a dead FUSE mount fails stat: still mounted
	}
	if syscall.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// chownTree gives everything under dir to uid:gid, as a checkout of the
// agents' user would be.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
