// Command bench is intentfs's benchmark harness: it runs file-tree and
// ledger workloads against the native directory, a plain go-fuse loopback
// mount and intentfs in one run, interleaved and repeated, and reports
// medians and ratios. See the README's Performance section.
//
//	go run ./integration/bench [--workloads untar,rm,...] [--reps 5] [--json FILE]
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
)

func main() {
	workloads := pflag.StringSlice("workloads", []string{"ledger"}, "workloads to run: ledger")
	records := pflag.Int("ledger-records", 1_000_000, "records in the generated ledger")
	jsonOut := pflag.String("json", "", "also write the results as JSON to this file")
	workdir := pflag.String("workdir", "", "scratch directory (default: a temporary one)")
	pflag.Parse()

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
	for _, w := range *workloads {
		switch w {
		case "ledger":
			fmt.Fprintf(os.Stderr, "ledger: generating %d records…\n", *records)
			r, err := runLedger(bin, *records, dir)
			if err != nil {
				fail(err)
			}
			results["ledger"] = r
			fmt.Printf("ledger: %d records (%.0f MB): %.0f appends/s; log --intent (table): %.2fs; log --intent --json (all %d matches): %.2fs; verify: %.2fs (ok=%v, %d files hashed)\n",
				r.Records, float64(r.LedgerBytes)/1e6, r.AppendsPerSec, r.LogTableSec, r.LogMatches, r.LogQuerySec, r.VerifySec, r.VerifyOK, r.TrackedFiles)
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
	_ = strings.TrimSpace
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
