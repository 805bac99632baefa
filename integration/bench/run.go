package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// sample is one timed phase of one run.
type sample struct {
	Seconds float64 `json:"seconds"`
	RSSMB   float64 `json:"daemon_peak_rss_mb,omitempty"`
	CPUSec  float64 `json:"daemon_cpu_sec,omitempty"`
	// PhaseCPUSec is the daemon's CPU time during this phase alone (CPUSec
	// is the whole run's, with what it did after the phase ended): set
	// beside the phase's wall time, it says whether the time went to the
	// daemon or to the kernel and the round trips.
	PhaseCPUSec float64 `json:"daemon_phase_cpu_sec,omitempty"`
}

// result groups the samples of a phase, mode and storage.
type result struct {
	Storage string   `json:"storage"`
	Phase   string   `json:"phase"`
	Mode    mode     `json:"mode"`
	Samples []sample `json:"samples"`
}

// opsLog keeps the FUSE request counts of the last intentfs run of each
// workload, and of each phase of a workload that counts them per phase
// ("search:search-warm"), for the report.
var opsLog = map[string]map[string]uint64{}

const benchPolicy = `active_intents:
  - id: INT-001
    name: benchmark workloads
    status: IN_PROGRESS
    owned_scope: ["**", ".git/config", ".git/hooks/**", ".git/info/**", ".git/branches/**"]
`

// runOnce prepares a fresh source, mounts it in mode m, runs the
// workload's phases and unmounts; for intentfs it checks the ledger.
func runOnce(env *benchEnv, w workload, m mode, base, bin, self string) ([]sample, error) {
	if m == modeIntentfsBase {
		bin = env.baseBin
	}
	root, err := os.MkdirTemp(base, w.name+"-"+string(m)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	src, mnt := filepath.Join(root, "src-dir"), filepath.Join(root, "mnt")
	os.MkdirAll(filepath.Join(src, ".orchestration"), 0o755)
	os.MkdirAll(mnt, 0o755)
	if err := os.WriteFile(filepath.Join(src, policy.IntentsFile), []byte(benchPolicy), 0o644); err != nil {
		return nil, err
	}
	if w.prepare != nil {
		if err := w.prepare(env, src); err != nil {
			return nil, err
		}
	}
	if env.agent != nil {
		// The agent owns its source, as in a workspace it was given.
		if err := os.Chmod(root, 0o755); err != nil {
			return nil, err
		}
		if err := sh(src, fmt.Sprintf("chown -R %d:%d .", env.agent.Uid, env.agent.Gid)); err != nil {
			return nil, err
		}
	}
	sh(src, "sync")
	mt, err := mount(m, bin, self, src, mnt)
	if err != nil {
		return nil, err
	}
	var out []sample
	var runErr error
	// The counts before each phase, so each phase's own requests can be
	// told apart (a warm search from the cold one before it).
	var before map[string]uint64
	if isIntentfs(m) && w.phaseRequests {
		before = fuseRequests(bin, mnt, root)
	}
	for _, p := range w.phases {
		_, cpuBefore := procUsage(mt.pid)
		d, err := timed(func() error { return p.run(env, mt.dir) })
		if err != nil {
			runErr = fmt.Errorf("%s on %s: %w", p.name, m, err)
			break
		}
		_, cpuAfter := procUsage(mt.pid)
		out = append(out, sample{Seconds: d.Seconds(), PhaseCPUSec: cpuAfter - cpuBefore})
		if isIntentfs(m) && w.phaseRequests {
			after := fuseRequests(bin, mnt, root)
			if after != nil && before != nil {
				opsLog[opsKey(w.name+":"+p.name, m)] = opsDelta(after, before)
			}
			before = after
		}
	}
	if isIntentfs(m) {
		if ops := fuseRequests(bin, mnt, root); ops != nil {
			opsLog[opsKey(w.name, m)] = ops
		}
	}
	rss, cpu := procUsage(mt.pid)
	for i := range out {
		out[i].RSSMB, out[i].CPUSec = rss, cpu
	}
	if err := mt.stop(); err != nil && runErr == nil && m != modeBindfs {
		runErr = fmt.Errorf("unmounting %s: %w", m, err)
	}
	if runErr != nil {
		return nil, runErr
	}
	if isIntentfs(m) && w.expect != nil {
		events, want := w.expect(env)
		n := 0
		ledger.Query(workspace.At(src).LedgerPath(), ledger.Filter{}, func(r *ledger.Record) error {
			if slices.Contains(events, string(r.Gov().Event)) {
				n++
			}
			return nil
		})
		if n < want {
			return nil, fmt.Errorf("%s: the ledger has %d %v records, want at least %d: the run skipped work", w.name, n, events, want)
		}
	}
	return out, nil
}

// fuseRequests returns the FUSE request counts of the intentfs mount at
// mnt, by opcode, from its status; nil if status fails.
func fuseRequests(bin, mnt, root string) map[string]uint64 {
	cmd := exec.Command(bin, "status", "--json", "--mount", mnt)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+filepath.Join(root, "run"))
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var st struct {
		Ops map[string]uint64 `json:"fuse_requests"`
	}
	if json.Unmarshal(out, &st) != nil {
		return nil
	}
	if st.Ops == nil {
		st.Ops = map[string]uint64{}
	}
	return st.Ops
}

// opsDelta returns the requests counted in after and not in before,
// leaving out the opcodes with none.
func opsDelta(after, before map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for op, n := range after {
		if n > before[op] {
			d[op] = n - before[op]
		}
	}
	return d
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// opsKey names a workload's request counts: the workload, and for the
// io_uring transport the workload with "/uring".
func opsKey(workload string, m mode) string {
	switch m {
	case modeIntentfsURing:
		return workload + "/uring"
	case modeIntentfsBase:
		return workload + "/base"
	case modeIntentfsCached:
		return workload + "/cached"
	case modeIntentfsCachedURing:
		return workload + "/cached-uring"
	}
	return workload
}

// modeRatios prints, per storage and phase, the medians of mode num
// divided by those of mode den, when both ran.
func modeRatios(results []*result, num, den mode) string {
	idx := map[string]*result{}
	for _, r := range results {
		idx[r.Storage+"/"+r.Phase+"/"+string(r.Mode)] = r
	}
	med := func(r *result) float64 {
		var xs []float64
		for _, s := range r.Samples {
			xs = append(xs, s.Seconds)
		}
		return median(xs)
	}
	var b strings.Builder
	for _, r := range results {
		if r.Mode != num {
			continue
		}
		d := idx[r.Storage+"/"+r.Phase+"/"+string(den)]
		if d == nil || med(d) == 0 {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "%-7s %-15s %14s %14s %10s\n", "storage", "phase", string(den)+" s", string(num)+" s", "ratio")
		}
		fmt.Fprintf(&b, "%-7s %-15s %14.3f %14.3f %9.2f×\n", r.Storage, r.Phase, med(d), med(r), med(r)/med(d))
	}
	return b.String()
}

// report prints the table: per storage and phase, each mode's median,
// min and max, and intentfs's ratios to native and to loopback.
func report(results []*result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %-15s %-14s %9s %9s %9s %10s %10s %9s %8s %10s\n", "storage", "phase", "mode", "median s", "min s", "max s", "÷native", "÷loopback", "RSS MB", "CPU s", "phase CPU")
	idx := map[string]*result{}
	for _, r := range results {
		idx[r.Storage+"/"+r.Phase+"/"+string(r.Mode)] = r
	}
	med := func(r *result) float64 {
		var xs []float64
		for _, s := range r.Samples {
			xs = append(xs, s.Seconds)
		}
		return median(xs)
	}
	for _, r := range results {
		var xs, rss, cpu, phaseCPU []float64
		for _, s := range r.Samples {
			xs = append(xs, s.Seconds)
			rss = append(rss, s.RSSMB)
			cpu = append(cpu, s.CPUSec)
			phaseCPU = append(phaseCPU, s.PhaseCPUSec)
		}
		ratioN, ratioL := "", ""
		if n := idx[r.Storage+"/"+r.Phase+"/native"]; n != nil && r.Mode != modeNative && med(n) > 0 {
			ratioN = fmt.Sprintf("%.2f×", med(r)/med(n))
		}
		if l := idx[r.Storage+"/"+r.Phase+"/loopback"]; l != nil && r.Mode != modeLoopback && r.Mode != modeNative && med(l) > 0 {
			ratioL = fmt.Sprintf("%.2f×", med(r)/med(l))
		}
		fmt.Fprintf(&b, "%-7s %-15s %-14s %9.3f %9.3f %9.3f %10s %10s %9.0f %8.1f %10.2f\n", r.Storage, r.Phase, r.Mode, median(xs), slices.Min(xs), slices.Max(xs),
			ratioN, ratioL, median(rss), median(cpu), median(phaseCPU))
	}
	return b.String()
}

// runFileWorkloads runs each workload on each storage, interleaving modes
// within every repetition, after one warm-up run per mode.
func runFileWorkloads(env *benchEnv, names []string, modes []mode, storages map[string]string, reps int, bin, self string) ([]*result, error) {
	var results []*result
	for _, st := range []string{"tmpfs", "disk"} {
		base, ok := storages[st]
		if !ok {
			continue
		}
		for _, w := range workloads() {
			if !slices.Contains(names, w.name) {
				continue
			}
			byKey := map[string]*result{}
			for rep := -1; rep < reps; rep++ { // rep -1 is the warm-up
				for _, m := range modes {
					start := time.Now()
					samples, err := runOnce(env, w, m, base, bin, self)
					if err != nil {
						return results, err
					}
					fmt.Fprintf(os.Stderr, "  %s %s %s rep %d: %.2fs\n", st, w.name, m, rep, time.Since(start).Seconds())
					if rep < 0 {
						continue
					}
					for i, p := range w.phases {
						k := p.name + "/" + string(m)
						if byKey[k] == nil {
							byKey[k] = &result{Storage: st, Phase: p.name, Mode: m}
						}
						byKey[k].Samples = append(byKey[k].Samples, samples[i])
					}
				}
			}
			for _, p := range w.phases {
				for _, m := range modes {
					if r := byKey[p.name+"/"+string(m)]; r != nil {
						results = append(results, r)
					}
				}
			}
		}
	}
	return results, nil
}
