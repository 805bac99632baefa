package sessions

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"

	"github.com/intentfs/intentfs/ledger"
)

// TestDeniedChangesLeaveSourceUnchanged drives ordinary tools at paths
// outside INT-001's scope; each must fail with EACCES, be recorded as a
// denial, and leave the source as it was.
func TestDeniedChangesLeaveSourceUnchanged(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", testenv.SeedTree())
	tarball := filepath.Join(t.TempDir(), "it.tar") // a path of this test's own: others run at the same time
	tests := []struct {
		name   string
		script string
		path   string // the path the denial names
		op     string
	}{
		{"redirect create", "echo x > new.txt", "new.txt", "create"},
		{"redirect overwrite", "echo x > README.md", "README.md", "open_write"},
		{"append", "echo x >> main.go", "main.go", "open_write"},
		{"cp into", "cp src/existing.go lib/copy.go", "lib/copy.go", "create"},
		{"mv out of scope", "mv src/existing.go moved.go", "moved.go", "rename"},
		{"mv into scope", "mv main.go src/main.go", "main.go", "rename"},
		// The denial names the file sed edits, not its temporary.
		{"sed -i", "sed -i s/package/pkg/ lib/util.go", "lib/util.go", "create"},
		{"tar -x", "tar -cf " + tarball + " -C /etc hostname && tar -xf " + tarball + " -C lib", "lib/hostname", "create"},
		{"hard link launders", "ln main.go src/alias.go", "main.go", "link"},
		{"symlink", "ln -s /etc/passwd lib/pw", "lib/pw", "symlink"},
		{"chmod", "chmod 600 main.go", "main.go", "chmod"},
		{"touch existing", "touch main.go", "main.go", "utimes"},
		{"truncate", "truncate -s 0 README.md", "README.md", "open_write"},
		{"rm", "rm main.go", "main.go", "unlink"},
		{"rm -r", "rm -r lib", "lib/deep/x.go", "unlink"},
		{"mkdir", "mkdir other", "other", "mkdir"},
		{"scope sibling file", "echo x > docs/other.md", "docs/other.md", "open_write"},
		{"policy is read-only", "echo x >> .orchestration/active_intents.yaml", ".orchestration/active_intents.yaml", "open_write"},
		{"ledger is read-only", "rm .orchestration/agent_trace.jsonl", ".orchestration/agent_trace.jsonl", "unlink"},
		{"git hook", "echo evil > .git/hooks/pre-commit", ".git/hooks/pre-commit", "create"},
		{"git config", "echo '[core] fsmonitor=evil' >> .git/config", ".git/config", "open_write"},
		{"rename .git away", "mv .git g", ".git", "rename"},
	}
	before := snapshotTree(t, e.Src)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.T = t
			cached := testenv.TestDataPath() == "cached"
			if out, err := e.Sh(tt.script); err == nil || !strings.Contains(out, "Permission denied") &&
				// On the cached data path an append is refused at
				// write(2), which the shell's built-in echo reports as
				// "I/O error" whatever the errno.
				!(cached && strings.Contains(out, "I/O error")) {
				t.Fatalf("%s: want Permission denied, got err=%v\n%s", tt.script, err, out)
			}
			r := e.WaitRecord("denial of "+tt.path, func(r *ledger.Record) bool {
				g := r.Gov()
				ok, _ := filepath.Match(tt.path, r.Path())
				// With no OPEN, an O_TRUNC open is decided at the
				// truncation it sends (SETATTR) on the cached data path.
				opOK := g.Op == tt.op || cached && tt.op == string(policy.OpOpenWrite) && g.Op == string(policy.OpTruncate)
				return g.Event == ledger.EventDenied && ok && opOK
			})
			g := r.Gov()
			if g.Reason == "" || g.Code == "" || g.ScopeValidation != "FAIL" || g.Process == nil || g.Process.Pid == 0 {
				t.Errorf("denial record incomplete: %+v", g)
			}
		})
	}
	e.T = t
	if after := snapshotTree(t, e.Src); !testenv.EqualTrees(before, after) {
		t.Fatalf("source changed by denied operations:\nbefore %v\nafter  %v", before, after)
	}
	st := e.D.Status()
	if st.Counters.Denied < uint64(len(tests)) || len(st.RecentDenials) == 0 {
		t.Errorf("status counters %+v, %d recent denials", st.Counters, len(st.RecentDenials))
	}
	out := e.MustSh("cat .intentfs/denials")
	if !testenv.HasLine(out, "main.go intent=INT-001 code=OUT_OF_SCOPE") {
		t.Errorf(".intentfs/denials lacks the main.go denial:\n%s", out)
	}
}

// snapshotTree maps every source path below root (but the ledger, which
// denials append to) to its content or kind.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case strings.HasPrefix(rel, ".orchestration/") && rel != ".orchestration/active_intents.yaml":
			// The daemon's own files: ledger, lock, lessons, intent map.
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = info.Mode().String() + " " + string(b)
		default:
			out[rel] = info.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDeniedWithoutUsableIntent(t *testing.T) {
	testenv.Parallel(t)
	tests := []struct {
		name   string
		intent string
		setup  func(e *testenv.Env)
		code   string
		reason string
	}{
		{"none selected", "", nil, "NO_ACTIVE_INTENT", "no intent is active"},
		{"active intent blocked by a human", "INT-002", func(e *testenv.Env) {
			testenv.WriteFile(t, filepath.Join(e.Src, policy.IntentsFile), strings.Replace(testenv.ScopePolicy, "name: everything\n    status: IN_PROGRESS", "name: everything\n    status: BLOCKED", 1))
			testenv.WaitFor(t, func() bool { return e.D.Snapshot().Intents.Get("INT-002").Status == policy.StatusBlocked }, "the edit to be reloaded")
		}, "INTENT_NOT_IN_PROGRESS", "BLOCKED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := testenv.Mount(t, testenv.ScopePolicy, tt.intent, testenv.SeedTree())
			if tt.setup != nil {
				tt.setup(e)
			}
			e.MustDeny("echo x > src/new.go")
			r := e.WaitRecord("denial", testenv.Event(ledger.EventDenied, "src/new.go"))
			if r.Gov().Code != tt.code || !strings.Contains(r.Gov().Reason, tt.reason) {
				t.Fatalf("denial = %s %q", r.Gov().Code, r.Gov().Reason)
			}
			if _, ok := e.SrcContent("src/new.go"); ok {
				t.Fatal("file created despite denial")
			}
		})
	}
}

// TestAllowedChangesAreRecorded drives tools inside the scope and checks
// each ledger record against the real content of the source.
func TestAllowedChangesAreRecorded(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", testenv.SeedTree())
	oldExisting := e.Sha("src/existing.go")

	t.Run("create with redirect", func(t *testing.T) {
		e.T = t
		e.MustSh("printf 'one\\ntwo\\nthree\\n' > src/new.go")
		r := e.WaitRecord("create", testenv.Event(ledger.EventCreate, "src/new.go"))
		g := r.Gov()
		if ledger.Str(g.PostHash) != e.Sha("src/new.go") || g.PreHash != nil || ledger.Str(g.IntentID) != "INT-001" || g.MutationClass != ledger.ClassCreation {
			t.Fatalf("create record %+v", g)
		}
		rg := r.Files[0].Conversations[0].Ranges
		if len(rg) != 1 || rg[0].StartLine != 1 || rg[0].EndLine != 3 || rg[0].ContentHash != e.Sha("src/new.go") {
			t.Fatalf("ranges = %+v", rg)
		}
		if g.Process == nil || g.Process.Comm != "sh" || g.Process.Exe == "" {
			t.Fatalf("process = %+v", g.Process)
		}
	})
	t.Run("append keeps pre and post", func(t *testing.T) {
		e.T = t
		pre := e.Sha("src/existing.go")
		e.MustSh("echo '// more' >> src/existing.go")
		r := e.WaitRecord("write", testenv.Event(ledger.EventWrite, "src/existing.go"))
		g := r.Gov()
		// Only a comment was added to Go source: documentation.
		if ledger.Str(g.PreHash) != pre || ledger.Str(g.PostHash) != e.Sha("src/existing.go") || g.MutationClass != "DOCUMENTATION" {
			t.Fatalf("write record %+v (pre want %s)", g, pre)
		}
		// The new line is the changed hunk: line 4 of the new version.
		if rg := r.Files[0].Conversations[0].Ranges; len(rg) != 1 || rg[0].StartLine != 4 || rg[0].EndLine != 4 {
			t.Fatalf("ranges %+v", rg)
		}
		if g.PreImage != "stored" {
			t.Fatalf("pre_image %q", g.PreImage)
		}
		if pre != oldExisting {
			t.Fatal("precondition")
		}
	})
	t.Run("sed -i is create plus rename over", func(t *testing.T) {
		e.T = t
		pre := e.Sha("src/existing.go")
		e.MustSh("sed -i s/func/fn/ src/existing.go")
		r := e.WaitRecord("rename", testenv.Event(ledger.EventRename, "src/existing.go"))
		g := r.Gov()
		if ledger.Str(g.PreHash) != pre || ledger.Str(g.PostHash) != e.Sha("src/existing.go") || !strings.HasPrefix(g.FromPath, "src/sed") {
			t.Fatalf("rename record %+v", g)
		}
		// sed changed code (func → fn): an evolution, with the hunk of line 3.
		if g.MutationClass != ledger.ClassEvolution || g.PreImage != "stored" {
			t.Fatalf("sed -i class %s pre_image %q", g.MutationClass, g.PreImage)
		}
		if rg := r.Files[0].Conversations[0].Ranges; len(rg) != 1 || rg[0].StartLine != 3 {
			t.Fatalf("sed -i ranges %+v", rg)
		}
		e.WaitRecord("create of sed temp", testenv.Event(ledger.EventCreate, g.FromPath))
	})
	t.Run("cp and mv", func(t *testing.T) {
		e.T = t
		e.MustSh("cp src/new.go src/copy.go && mv src/copy.go src/moved.go")
		e.WaitRecord("cp create", testenv.Event(ledger.EventCreate, "src/copy.go"))
		r := e.WaitRecord("mv", testenv.Event(ledger.EventRename, "src/moved.go"))
		if r.Gov().FromPath != "src/copy.go" || ledger.Str(r.Gov().PostHash) != e.Sha("src/moved.go") {
			t.Fatalf("mv record %+v", r.Gov())
		}
	})
	t.Run("mkdir for a scope prefix and a file in it", func(t *testing.T) {
		e.T = t
		e.MustSh("mkdir -p src/pkg/sub && echo x > docs/api.md")
		e.WaitRecord("mkdir", testenv.Event(ledger.EventMkdir, "src/pkg/sub"))
		r := e.WaitRecord("docs write", testenv.Event(ledger.EventWrite, "docs/api.md"))
		if ledger.Str(r.Gov().PostHash) != e.Sha("docs/api.md") {
			t.Fatal("docs/api.md post hash")
		}
	})
	t.Run("tar -x", func(t *testing.T) {
		e.T = t
		tmp := t.TempDir()
		testenv.WriteFile(t, filepath.Join(tmp, "t/a.txt"), "a\n")
		testenv.WriteFile(t, filepath.Join(tmp, "t/b/c.txt"), "c\n")
		if err := os.Chmod(filepath.Join(tmp, "t/a.txt"), 0o751); err != nil {
			t.Fatal(err)
		}
		out, err := testenv.RunCmd("tar", "-cf", filepath.Join(tmp, "x.tar"), "-C", tmp, "t")
		if err != nil {
			t.Fatal(out)
		}
		e.MustSh("tar -xf " + filepath.Join(tmp, "x.tar") + " -C src")
		for _, p := range []string{"src/t/a.txt", "src/t/b/c.txt"} {
			r := e.WaitRecord("tar create "+p, testenv.Event(ledger.EventCreate, p))
			if ledger.Str(r.Gov().PostHash) != e.Sha(p) {
				t.Fatalf("%s post hash", p)
			}
		}
		// tar sets each file's times, owner and mode through the descriptor
		// it created the file with: that is part of the creation, which is
		// one record carrying the mode.
		for _, r := range e.Records() {
			if r.Path() == "src/t/a.txt" && r.Gov().Event != ledger.EventCreate {
				t.Fatalf("tar -x made a %s record for a file it created", r.Gov().Event)
			}
		}
		if r := e.WaitRecord("tar create", testenv.Event(ledger.EventCreate, "src/t/a.txt")); r.Gov().Mode != "0751" {
			t.Fatalf("creation record mode %q, want 0751", r.Gov().Mode)
		}
		if st, err := os.Stat(filepath.Join(e.Src, "src/t/a.txt")); err != nil || st.Mode().Perm() != 0o751 {
			t.Fatalf("source mode %v, err %v", st.Mode(), err)
		}
	})
	t.Run("ln, ln -s, chmod, touch, truncate", func(t *testing.T) {
		e.T = t
		e.MustSh("chmod 640 src/new.go && touch src/new.go && truncate -s 4 src/moved.go && ln src/moved.go src/hard.go && ln -s new.go src/soft.go")
		if r := e.WaitRecord("link", testenv.Event(ledger.EventLink, "src/hard.go")); r.Gov().FromPath != "src/moved.go" {
			t.Fatalf("link from %q", r.Gov().FromPath)
		}
		e.WaitRecord("symlink", testenv.Event(ledger.EventSymlink, "src/soft.go"))
		if r := e.WaitRecord("chmod", testenv.Event(ledger.EventChmod, "src/new.go")); r.Gov().Mode != "0640" {
			t.Fatalf("chmod mode %q", r.Gov().Mode)
		}
		e.WaitRecord("utimes", testenv.Event(ledger.EventUtimes, "src/new.go"))
		r := e.WaitRecord("truncate", func(r *ledger.Record) bool {
			return r.Path() == "src/moved.go" && (r.Gov().Event == ledger.EventTruncate || r.Gov().Event == ledger.EventWrite)
		})
		if ledger.Str(r.Gov().PostHash) != e.Sha("src/moved.go") {
			t.Fatalf("truncate post hash %+v", r.Gov())
		}
		if st, _ := os.Stat(filepath.Join(e.Src, "src/new.go")); st.Mode().Perm() != 0o640 {
			t.Fatalf("source mode %v", st.Mode())
		}
	})
	t.Run("rm -r keeps pre hashes", func(t *testing.T) {
		e.T = t
		pre := e.Sha("src/t/b/c.txt")
		e.MustSh("rm -r src/t")
		r := e.WaitRecord("delete", testenv.Event(ledger.EventDelete, "src/t/b/c.txt"))
		if ledger.Str(r.Gov().PreHash) != pre || r.Gov().PostHash != nil {
			t.Fatalf("delete record %+v", r.Gov())
		}
		e.WaitRecord("rmdir", testenv.Event(ledger.EventRmdir, "src/t"))
		if _, ok := e.SrcContent("src/t/a.txt"); ok {
			t.Fatal("file still in source")
		}
	})
	t.Run("unchanged rewrite makes no record", func(t *testing.T) {
		e.T = t
		n := len(e.Records())
		e.MustSh("cat src/new.go > /dev/null; exec 3>>src/new.go; exec 3>&-")
		// A marker change, recorded after the no-op handle was released.
		e.MustSh("echo y > src/marker.go")
		e.WaitRecord("marker", testenv.Event(ledger.EventCreate, "src/marker.go"))
		for _, r := range e.Records()[n:] {
			if r.Path() == "src/new.go" {
				t.Fatalf("no-op open produced %+v", r.Gov())
			}
		}
	})
}
