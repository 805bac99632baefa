package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// procSample is one reading of the daemon's resources.
type procSample struct {
	AtSec   float64 `json:"at_sec"`
	RSSKB   int64   `json:"rss_kb"`
	FDs     int     `json:"fds"`
	Threads int     `json:"threads"`
}

// readProc reads a process's resident set (VmRSS), open descriptors and
// threads from /proc.
func readProc(pid int) (procSample, error) {
	var s procSample
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			s.RSSKB, _ = strconv.ParseInt(f[1], 10, 64)
		case "Threads:":
			s.Threads, _ = strconv.Atoi(f[1])
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = len(fds)
	return s, nil
}

// sampleProc reads pid every interval until ctx ends, and returns the
// samples.
func sampleProc(ctx context.Context, pid int, interval time.Duration) []procSample {
	start := time.Now()
	var out []procSample
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if s, err := readProc(pid); err == nil {
			s.AtSec = time.Since(start).Seconds()
			out = append(out, s)
		}
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

// sampleInterval spreads about 60 samples over the soak, every 0.5 s at
// the most and every 5 s at the least.
func sampleInterval(d time.Duration) time.Duration {
	return min(max(d/60, 500*time.Millisecond), 5*time.Second)
}

// trend says whether a resource stayed flat over the soak.
type trend struct {
	First float64 `json:"first"`
	Last  float64 `json:"last"`
	Max   float64 `json:"max"`
	// Start and End are the medians of the first and last quarters of
	// the samples after the warm-up; Allowed is how much End may exceed
	// Start.
	Start   float64 `json:"start_median"`
	End     float64 `json:"end_median"`
	Allowed float64 `json:"allowed_growth"`
	// Verdict is "flat", "growing", or "too few samples" (fewer than 8
	// after the warm-up: nothing can be said).
	Verdict string `json:"verdict"`
}

// Flat resources, defined: after the warm-up (the first sixth of the
// soak, at least 3 s and at most 20 s, in which caches, pools and the Go heap reach their
// working size), the median of the last quarter of the samples may exceed
// the median of the first quarter by 20%, by a small absolute slack, or
// by how far the first quarter itself swung above its median, whichever
// is larger. Medians, not single samples, because a resource
// legitimately swings with the work in flight (a tree being extracted
// holds directory handles; the heap breathes with the GC). A leak of one
// descriptor or a few KiB per operation, over thousands of operations,
// exceeds all three; a resource that swings widely with the work (the
// directory handles of trees extracted and removed in turn: 100 to 250 in
// a soak of seconds) is judged against the swing it showed from the start.
const (
	growthRatio      = 0.20
	rssSlackKB       = 8 << 10
	fdSlack          = 64
	minTrendSamples  = 8
	maxWarmUp        = 20 * time.Second
	minWarmUp        = 3 * time.Second
	warmUpOfDuration = 6
)

// warmUp is the part of a soak of duration d left out of the trend.
//
// At least minWarmUp, but no more than a third of d: in a soak of ten
// seconds a sixth (1.7 s) left the daemon's directory handles still
// climbing to their working count in the first quarter that the trend
// starts from, and a flat daemon read as growing (168 → 250).
func warmUp(d time.Duration) time.Duration {
	return min(max(d/warmUpOfDuration, minWarmUp), d/3, maxWarmUp)
}

// trendOf judges the series xs, sampled at atSec seconds, with the
// absolute slack given.
func trendOf(atSec, xs []float64, warmUpSec, slack float64) trend {
	if len(xs) == 0 {
		return trend{Verdict: "too few samples"}
	}
	t := trend{First: xs[0], Last: xs[len(xs)-1], Max: xs[0]}
	var steady []float64
	for i, x := range xs {
		t.Max = max(t.Max, x)
		if atSec[i] >= warmUpSec {
			steady = append(steady, x)
		}
	}
	if len(steady) < minTrendSamples {
		t.Verdict = "too few samples"
		return t
	}
	q := len(steady) / 4
	t.Start, t.End = median(steady[:q]), median(steady[len(steady)-q:])
	first := steady[:q]
	t.Allowed = max(t.Start*growthRatio, slack, slices.Max(first)-t.Start)
	t.Verdict = "flat"
	if t.End-t.Start > t.Allowed {
		t.Verdict = "growing"
	}
	return t
}

// daemonTrends judges the daemon's RSS (in MB) and descriptors over
// samples taken during a soak of duration d. The descriptors' trend is
// reported, not judged: see soakfds.go.
func daemonTrends(samples []procSample, d time.Duration) (rss, fds trend) {
	var at, rssMB, nfd []float64
	for _, s := range samples {
		at = append(at, s.AtSec)
		rssMB = append(rssMB, float64(s.RSSKB)/1024)
		nfd = append(nfd, float64(s.FDs))
	}
	w := warmUp(d).Seconds()
	return trendOf(at, rssMB, w, rssSlackKB/1024), trendOf(at, nfd, w, fdSlack)
}
