package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"strconv"
	"strings"
	"testing"
)

// denialsHoarder fills the denials list with long lines (one process
// each), then holds as
// many read-opens of .intentfs/denials as the mount lets it (each one a
// snapshot of the list), and prints how many and how large; then closes
// them and opens once more.
const denialsHoarder = `
import os, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
last = "none"
for i in range(100):
    # One process a refusal: a process's repeated refusals in one
    # directory collapse into one line.
    pid = os.fork()
    if pid == 0:
        try:
            open("%03d%s" % (i, "x" * 240), "w").close()
            os._exit(0)
        except OSError:
            os._exit(13)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 13:
        last = "Permission denied"
print("create", last)
size = len(open(".intentfs/denials", "rb").read())
fds, err = [], "none"
for i in range(4000):
    try:
        fds.append(os.open(".intentfs/denials", os.O_RDONLY))
    except OSError as e:
        err = e.strerror
        break
print("size", size)
print("held", len(fds))
print("refusal", err)
for fd in fds:
    os.close(fd)
again = "ok"
try:
    os.close(os.open(".intentfs/denials", os.O_RDONLY))
except OSError as e:
    again = e.strerror
print("after", again)
`

// TestControlSnapshotsAreBounded: each read-open of a control file holds
// a snapshot of its content until it is closed. One agent process holding
// thousands of opens of a large .intentfs/denials must not grow the
// daemon without bound: past its share the agent's opens are refused
// (EMFILE), and a closed handle gives its share back.
func TestControlSnapshotsAreBounded(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-001", nil, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	opensBefore := e.D.Status().Ops["OPEN"]
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "hoard.py", denialsHoarder))
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	res := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		res[k] = v
	}
	t.Logf("agent:\n%s", out)
	size, _ := strconv.Atoi(res["size"])
	held, _ := strconv.Atoi(res["held"])
	if size < 30000 {
		t.Fatalf("the denials file holds %d bytes; the test needs a large one:\n%s", size, out)
	}
	if testenv.TestDataPath() == "cached" {
		// No OPEN reaches the daemon on the cached data path (the first
		// is declined, and the kernel sends none after it): an open
		// holds no snapshot, nothing in the daemon grows with the
		// agent's opens, and its own limit is the only one.
		if opens := e.D.Status().Ops["OPEN"] - opensBefore; opens > 1 {
			t.Errorf("%d OPENs reached the daemon on the cached data path while the agent held %d opens", opens, held)
		}
		if held != 4000 || res["after"] != "ok" {
			t.Errorf("the agent held %d opens (want all 4000), then: %s", held, res["after"])
		}
		return
	}
	if held >= 4000 {
		t.Fatalf("the agent held %d snapshots of %d bytes (%d MB) of .intentfs/denials: nothing bounds them", held, size, held*size>>20)
	}
	if res["refusal"] != "Too many open files" {
		t.Errorf("refusal %q, want EMFILE", res["refusal"])
	}
	if res["after"] != "ok" {
		t.Errorf("open after closing every handle: %s (the share was not given back)", res["after"])
	}
}
