package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// whyNoSoak says why the soak cannot run here ("" if it can): it mounts
// and starts sessions, which takes root and /dev/fuse.
func whyNoSoak() string {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return "/dev/fuse is not usable: " + err.Error()
	}
	f.Close()
	if os.Geteuid() != 0 {
		return "the soak must run as root"
	}
	return ""
}

// TestSoakShort runs the soak for 10 s with all of its checks: four
// sealed sessions against a daemon in its own process, flat RSS and
// descriptors, a ledger that verifies and accounts for every session.
func TestSoakShort(t *testing.T) {
	if why := whyNoSoak(); why != "" {
		if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("FUSE is required (INTENTFS_REQUIRE_FUSE=1) but %s", why)
		}
		t.Skipf("skipping: %s (set INTENTFS_REQUIRE_FUSE=1 to make this a failure)", why)
	}
	if testing.Short() {
		t.Skip("the soak takes 10 s")
	}
	bin := filepath.Join(t.TempDir(), "intentfs")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/intentfs/intentfs/cmd/intentfs").CombinedOutput(); err != nil {
		t.Fatalf("building intentfs: %v\n%s", err, out)
	}
	r, err := runSoak(bin, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// runSoak passing means every check passed; these make sure the
	// checks had something to check.
	if len(r.Sessions) != soakSessions || len(r.Samples) < minTrendSamples {
		t.Fatalf("%d sessions, %d samples", len(r.Sessions), len(r.Samples))
	}
	refused := 0
	for _, s := range r.Sessions {
		refused += s.Refused
		if s.ID == "" || s.Starts != 1 || s.Ends != 1 || s.Builds == 0 || s.Changes == 0 {
			t.Errorf("session %+v", *s)
		}
	}
	if refused == 0 {
		t.Errorf("no session tried anything outside its scope")
	}
	if !r.VerifyOK || r.LedgerRecords == 0 || r.RSSMB.Verdict != "flat" || r.FDLeak.Verdict != "flat" {
		t.Errorf("verify ok %v, %d records, RSS %s, fds %s", r.VerifyOK, r.LedgerRecords, r.RSSMB.Verdict, r.FDLeak.Verdict)
	}
}
