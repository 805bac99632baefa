package fence

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// recreateAfterRemoval is run as the agent in the mount with fd 3 the
// source's src/ directory: the kernel learns src/gone.txt, the file is
// removed in the source (as a human, or intentfs removing a temporary,
// would), and at once the agent creates it anew through the mount, well
// inside the time the kernel keeps the entry it learnt.
const recreateAfterRemoval = `
import os
os.stat("src/gone.txt")
os.unlink("gone.txt", dir_fd=3)
with open("src/gone.txt", "w") as f:
    f.write("anew\n")
print("created")
`

// TestCreateOverAnEntryRemovedAtTheSource: a file removed in the source
// while the kernel still holds its entry is created anew by an open with
// O_CREAT through the mount, as on a disk, instead of failing ENOENT (the
// kernel, trusting its entry, opens the file it thinks is there; the
// daemon finds it gone and has the kernel look the name up again).
func TestCreateOverAnEntryRemovedAtTheSource(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.MountPrepared(t, cachedPolicy, "INT-001", map[string]string{"src/gone.txt": "old\n"}, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	dir, err := os.Open(filepath.Join(e.Src, "src"))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for i := range 5 {
		script := testenv.WorldReadable(t, "recreate.py", recreateAfterRemoval)
		cmd := testenv.CommandIn(e.Mnt, "setpriv", "--reuid="+strconv.Itoa(testenv.AgentUID), "--regid="+strconv.Itoa(testenv.AgentGID), "--clear-groups", "/usr/bin/python3", script)
		cmd.ExtraFiles = []*os.File{dir}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "created") {
			t.Fatalf("try %d: creating src/gone.txt anew right after its removal in the source: %v\n%s", i+1, err, out)
		}
		if got, _ := e.SrcContent("src/gone.txt"); got != "anew\n" {
			t.Fatalf("try %d: src/gone.txt in the source is %q, want %q", i+1, got, "anew\n")
		}
	}
}
