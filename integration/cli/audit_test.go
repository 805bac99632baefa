package cli

import (
	"os/exec"

	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

func TestRevertIntentRestoresTheTreeByteForByte(t *testing.T) {
	testenv.Parallel(t)
	seed := map[string]string{}
	for i := range 20 {
		seed[fmt.Sprintf("src/pkg%d/file%d.go", i%4, i)] = fmt.Sprintf("package pkg\n\n// file %d\nfunc F%d() int { return %d }\n", i, i, i)
	}
	seed["src/big.bin"] = strings.Repeat("\x00\x01binary", 20000)
	seed["src/keep/config.yaml"] = "a: 1\nb: 2\n"
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", seed)
	before := testenv.TreeBytes(t, e.Src)

	// A scripted agent: delete a tree, overwrite, sed -i, mv over, truncate, create.
	e.MustSh(`rm -rf src/pkg1 &&
		echo 'overwritten' > src/pkg0/file0.go &&
		sed -i 's/return/return -1 +/' src/pkg2/file2.go &&
		mv src/pkg3/file3.go src/pkg0/file4.go &&
		truncate -s 10 src/big.bin &&
		printf 'c: 3\n' >> src/keep/config.yaml &&
		mkdir -p src/new && echo brand-new > src/new/x.go`)
	e.WaitRecord("last change", testenv.Event(ledger.EventCreate, "src/new/x.go"))
	if after := testenv.TreeBytes(t, e.Src); testenv.EqualTrees(before, after) {
		t.Fatal("the agent changed nothing")
	}

	// Dry run first: nothing changes.
	plan, n, err := e.D.Revert(history.Request{Intent: "INT-002", DryRun: true}, &ledger.Process{Comm: "test"})
	if err != nil || n != 0 || len(plan.Steps) == 0 {
		t.Fatalf("dry run: %v %d %v", err, n, plan)
	}
	plan, n, err = e.D.Revert(history.Request{Intent: "INT-002"}, &ledger.Process{Comm: "test"})
	if err != nil {
		t.Fatalf("revert: %v\n%+v", err, plan)
	}
	if after := testenv.TreeBytes(t, e.Src); !testenv.EqualTrees(before, after) {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s differs: %q", k, trunc(after[k]))
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("extra %s", k)
			}
		}
		t.Fatalf("tree differs after revert (%d steps)", n)
	}
	// The revert is recorded, and a second revert sees it: it undoes
	// nothing again and reports no conflict.
	e.WaitRecord("revert record", func(r *ledger.Record) bool { return r.Gov().Event == ledger.EventRevert && r.Gov().RevertOf != "" })
	plan, n, err = e.D.Revert(history.Request{Intent: "INT-002"}, &ledger.Process{Comm: "test"})
	if err != nil || n != 0 || plan == nil || len(plan.Steps) != 0 || plan.AlreadyReverted == 0 {
		t.Fatalf("second revert: %v, %d applied, plan %+v", err, n, plan)
	}
	if after := testenv.TreeBytes(t, e.Src); !testenv.EqualTrees(before, after) {
		t.Fatal("the second revert changed the tree")
	}
	// Every hash the ledger names resolves to bytes.
	e.Records()
	rep := ledger.Verify(ledger.VerifyOptions{Ledger: e.D.LedgerPath(), Source: e.Src, ListObjects: objects.New(e.Src).List})
	for _, p := range rep.Problems {
		if p.Kind == ledger.ProblemPreImage || !rep.ChainOK() {
			t.Errorf("verify: %s", p)
		}
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

const twoIntents = `active_intents:
  - id: INT-001
    name: first pass
    status: IN_PROGRESS
    owned_scope: ["**"]
  - id: INT-002
    name: second pass
    status: IN_PROGRESS
    owned_scope: ["**"]
`

func TestBlameAcrossTwoIntents(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, twoIntents, "INT-001", map[string]string{"notes.txt": "from the human\n"})
	e.MustSh("printf 'one\\ntwo\\nthree\\n' >> notes.txt")
	e.WaitRecord("first write", testenv.Event(ledger.EventWrite, "notes.txt"))
	e.MustSh("echo INT-002 > .intentfs/active && sed -i 's/two/TWO/' notes.txt")
	e.WaitRecord("sed by INT-002", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventRename && r.Path() == "notes.txt"
	})
	// A change behind the ledger's back, then one more through the mount.
	f, _ := os.OpenFile(filepath.Join(e.Src, "notes.txt"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("by hand\n")
	f.Close()
	e.MustSh("echo four >> notes.txt")
	e.WaitRecord("append by INT-002", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventWrite && r.Path() == "notes.txt" && ledger.Str(r.Gov().IntentID) == "INT-002"
	})
	e.Records()
	h := &history.Source{Dir: e.Src, Ledger: e.D.LedgerPath(), Store: objects.New(e.Src)}
	lines, err := h.Blame("notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		who := l.Intent
		if l.Record == "" {
			who = "-"
		}
		got = append(got, fmt.Sprintf("%s:%s:%s", l.Text, who, strings.SplitN(l.Process, "[", 2)[0]))
	}
	want := "[from the human:-: one:INT-001:sh two→TWO three:INT-001:sh by hand:-: four:INT-002:sh]"
	want = strings.Replace(want, " two→TWO", " TWO:INT-002:sed", 1)
	if fmt.Sprint(got) != want {
		t.Fatalf("blame\n got %v\nwant %s", got, want)
	}

	// diff of the intent shows its net change.
	recs := []*ledger.Record{}
	ledger.Query(e.D.LedgerPath(), ledger.Filter{Intent: "INT-002"}, func(r *ledger.Record) error { recs = append(recs, r); return nil })
	diffs, err := h.NetDiffs(recs)
	if err != nil || len(diffs) != 1 || !strings.Contains(diffs[0], "-two\n+TWO\n") || !strings.Contains(diffs[0], "+four\n") {
		t.Fatalf("net diff: %v\n%v", err, diffs)
	}
}

// TestCrashDuringTarThenRemountVerify kills the daemon (-9) while tar
// extracts into the mount, remounts, and checks that the ledger is whole,
// its chain continues, and verify names what the crash left unrecorded.
func TestCrashDuringTarThenRemountVerify(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	// An archive to extract: 300 small files.
	tmp := t.TempDir()
	for i := range 300 {
		testenv.WriteFile(t, filepath.Join(tmp, "t", fmt.Sprintf("d%d/f%03d.txt", i%10, i)), strings.Repeat(fmt.Sprintf("line %d\n", i), 50))
	}
	if out, err := testenv.RunCmd("tar", "-cf", filepath.Join(tmp, "t.tar"), "-C", tmp, "t"); err != nil {
		t.Fatal(out)
	}
	c.Must("mount", repo, ws, "--intent", "INT-002")
	t.Cleanup(func() { testenv.DetachMount(ws) })
	var st control_status
	json.Unmarshal([]byte(c.Must("status", "--json", "--mount", ws)), &st)
	tar := exec.Command("tar", "-xf", filepath.Join(tmp, "t.tar"), "-C", ws)
	if err := tar.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the daemon once the ledger shows the extraction under way.
	testenv.WaitFor(t, func() bool {
		n := 0
		ledger.ScanFile(filepath.Join(repo, ledger.FileName), func(int, []byte) error { n++; return nil })
		return n > 40
	}, "the extraction to show in the ledger")
	syscall.Kill(st.Pid, syscall.SIGKILL)
	tar.Wait() // fails: the filesystem went away
	syscall.Unmount(ws, syscall.MNT_DETACH)
	// A killed process holds its files, the mount's lock among them, until
	// every thread has left the kernel: remounting before that is refused
	// as a mount still in use, rightly.
	testenv.WaitFor(t, func() bool { return testenv.ProcessExited(st.Pid) }, "the killed daemon to exit")
	// Remount: recovery happens at open; the chain must verify.
	c.Must("mount", repo, ws, "--intent", "INT-002")
	c.Must("unmount", ws)
	rep := ledger.Verify(ledger.VerifyOptions{Ledger: filepath.Join(repo, ledger.FileName), Source: repo})
	if !rep.ChainOK() {
		t.Fatalf("chain broken after kill -9: %v", rep.Problems)
	}
	ledgerFiles := map[string]bool{}
	ledger.Query(filepath.Join(repo, ledger.FileName), ledger.Filter{}, func(r *ledger.Record) error {
		if r.Gov().Event == ledger.EventCreate {
			ledgerFiles[r.Path()] = true
		}
		return nil
	})
	// Every extracted file is either recorded or named by verify.
	named := map[string]bool{}
	for _, p := range rep.Problems {
		named[p.Path] = true
	}
	filepath.Walk(filepath.Join(repo, "t"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			rel, _ := filepath.Rel(repo, p)
			if !ledgerFiles[rel] && !named[rel] {
				t.Errorf("%s is neither recorded nor reported by verify", rel)
			}
		}
		return nil
	})
	t.Logf("after kill -9: %d records, %d files recorded, %d problems named by verify", rep.Records, len(ledgerFiles), len(rep.Problems))
}

type control_status struct {
	Pid int `json:"pid"`
}
