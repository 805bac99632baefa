package main

import (
	"strings"
	"testing"
	"time"
)

func TestTrendOf(t *testing.T) {
	// series returns n samples one second apart, the i-th f(i).
	series := func(n int, f func(i int) float64) (at, xs []float64) {
		for i := range n {
			at, xs = append(at, float64(i)), append(xs, f(i))
		}
		return at, xs
	}
	tests := []struct {
		name        string
		n           int
		f           func(i int) float64
		warmUp      float64
		slack       float64
		wantVerdict string
		wantStart   float64
		wantEnd     float64
	}{
		{"constant", 40, func(int) float64 { return 30 }, 5, 8, "flat", 30, 30},
		{"a warm-up climb, then flat", 40, func(i int) float64 { return min(float64(i)*10, 30) }, 5, 8, "flat", 30, 30},
		{"a steady leak", 40, func(i int) float64 { return 30 + float64(i) }, 5, 8, "growing", 38.5, 65.5},
		// Within 20% of 100 but above the slack of 8: flat.
		{"growth under the ratio", 40, func(i int) float64 {
			if i < 20 {
				return 100
			}
			return 115
		}, 5, 8, "flat", 100, 115},
		// Above 20% of 10 but within the slack of 8: flat.
		{"growth under the slack", 40, func(i int) float64 {
			if i < 20 {
				return 10
			}
			return 17
		}, 5, 8, "flat", 10, 17},
		// A sawtooth (a cache swept now and then) is flat: medians, not
		// single samples, are compared.
		{"sawtooth", 40, func(i int) float64 { return 100 + float64(i%5)*40 }, 5, 64, "flat", 160, 200},
		// A resource that swings widely from the start (directory handles
		// of trees extracted and removed in turn) is flat while it stays
		// within that swing.
		{"a wide swing from the start", 40, func(i int) float64 {
			switch {
			case i >= 20:
				return 245
			case i%2 == 0:
				return 100
			}
			return 250
		}, 5, 64, "flat", 175, 245},
		// One spike at the end is not growth.
		{"a last spike", 40, func(i int) float64 {
			if i == 39 {
				return 500
			}
			return 30
		}, 5, 8, "flat", 30, 30},
		{"too short after the warm-up", 10, func(i int) float64 { return float64(i) * 100 }, 5, 8, "too few samples", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, xs := series(tt.n, tt.f)
			got := trendOf(at, xs, tt.warmUp, tt.slack)
			if got.Verdict != tt.wantVerdict || got.Start != tt.wantStart || got.End != tt.wantEnd {
				t.Errorf("verdict %q, medians %v → %v; want %q, %v → %v", got.Verdict, got.Start, got.End, tt.wantVerdict, tt.wantStart, tt.wantEnd)
			}
			if got.First != xs[0] || got.Last != xs[len(xs)-1] {
				t.Errorf("first %v last %v, want %v %v", got.First, got.Last, xs[0], xs[len(xs)-1])
			}
		})
	}
}

func TestSampleIntervalAndWarmUp(t *testing.T) {
	tests := []struct {
		d, interval, warm time.Duration
	}{
		{10 * time.Second, 500 * time.Millisecond, 3 * time.Second},
		{6 * time.Second, 500 * time.Millisecond, 2 * time.Second},
		{2 * time.Minute, 2 * time.Second, 20 * time.Second},
		{time.Hour, 5 * time.Second, 20 * time.Second},
	}
	for _, tt := range tests {
		if got := sampleInterval(tt.d); got != tt.interval {
			t.Errorf("sampleInterval(%s) = %s, want %s", tt.d, got, tt.interval)
		}
		if got := warmUp(tt.d); got != tt.warm {
			t.Errorf("warmUp(%s) = %s, want %s", tt.d, got, tt.warm)
		}
	}
}

// Each of the soak's checks fails the soak when what it checks is wrong.
func TestSoakJudge(t *testing.T) {
	good := func() *soakResult {
		return &soakResult{VerifyOK: true, RSSMB: trend{Verdict: "flat"}, FDLeak: fdVerdict{Verdict: "flat"},
			Sessions: []*soakSession{{Name: "soak-1", ID: "abc", dir: "agent1", Iterations: 5, Refused: 3,
				Starts: 1, Ends: 1, Changes: 100, Denials: 4, DaemonChanges: 100, DaemonDenials: 4}}}
	}
	tests := []struct {
		name   string
		change func(r *soakResult)
		want   string // in a problem; "" for none
	}{
		{"all well", func(*soakResult) {}, ""},
		{"RSS grew", func(r *soakResult) { r.RSSMB.Verdict = "growing" }, "RSS grew"},
		{"descriptors grew", func(r *soakResult) { r.FDLeak.Verdict = "leaking" }, "descriptors grew"},
		{"no iteration", func(r *soakResult) { r.Sessions[0].Iterations = 0 }, "completed no iteration"},
		{"a leak", func(r *soakResult) { r.Sessions[0].Leaks = 1 }, "outside its scope 1 times"},
		{"not listed", func(r *soakResult) { r.Sessions[0].ID = "" }, "does not list it"},
		{"no end", func(r *soakResult) { r.Sessions[0].Ends = 0 }, "0 session_end"},
		{"two starts", func(r *soakResult) { r.Sessions[0].Starts = 2 }, "2 session_start"},
		{"no change", func(r *soakResult) { r.Sessions[0].Changes, r.Sessions[0].DaemonChanges = 0, 0 }, "no change of it"},
		{"a change outside", func(r *soakResult) { r.Sessions[0].OutsideScope = 1 }, "outside agent1/"},
		{"a lost record", func(r *soakResult) { r.Sessions[0].Changes = 99 }, "the daemon counted 100"},
		{"a lost denial", func(r *soakResult) { r.Sessions[0].Denials, r.Sessions[0].DaemonDenials = 2, 2 }, "refused 3 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			tt.change(r)
			r.judge()
			got := strings.Join(r.Problems, "; ")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("problems %q, want one containing %q", got, tt.want)
			}
		})
	}
}
