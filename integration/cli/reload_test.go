package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/policy"
)

func TestPolicyEditTakesEffectWithinASecond(t *testing.T) {
	// Serial: asserts a one-second latency, which a loaded machine would break.
	testenv.Serial(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", testenv.SeedTree())
	// A new file in a directory the scope owns nothing of: a new name
	// beside docs/api.md would be a provisional file (see
	// integration/fence/atomic_save_test.go), refused only when it is renamed or removed.
	e.MustDeny("mkdir docs/sub")
	edited := strings.Replace(testenv.ScopePolicy, `["src/**", "docs/api.md"]`, `["src/**", "docs/**"]`, 1)
	testenv.WriteFile(t, filepath.Join(e.Src, policy.IntentsFile), edited)
	edit := time.Now()
	for {
		if _, err := e.Sh("mkdir -p docs/sub && echo x > docs/sub/new.md"); err == nil {
			break
		}
		if time.Since(edit) > time.Second {
			t.Fatalf("the edit did not take effect within 1s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// An invalid edit is rejected and reported; the last valid policy
	// stays in force (docs/** still allowed, nothing else opened up).
	testenv.WriteFile(t, filepath.Join(e.Src, policy.IntentsFile), "active_intents:\n  - id: INT-001\n    status: [\n")
	testenv.WaitFor(t, func() bool { return e.D.Status().Policy.ReloadError != "" }, "the invalid edit to be reported in status")
	if msg := e.D.Status().Policy.ReloadError; !strings.Contains(msg, "active_intents.yaml:") {
		t.Errorf("reload error does not name the file and line: %s", msg)
	}
	e.MustSh("echo y > docs/new2.md")
	e.MustDeny("echo y > main.go")

	// Removing the active intent denies with UNKNOWN_INTENT, never allows.
	testenv.WriteFile(t, filepath.Join(e.Src, policy.IntentsFile), "active_intents:\n  - id: INT-002\n    name: other\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n")
	testenv.WaitFor(t, func() bool {
		out, err := e.Sh("echo z > src/z.go")
		if err == nil {
			os.Remove(filepath.Join(e.Src, "src/z.go"))
		}
		return err != nil && strings.Contains(out, "Permission denied")
	}, "removing the active intent to deny a write")
	if d := e.D.Denials(nil); d[len(d)-1].Code != "UNKNOWN_INTENT" {
		t.Fatalf("last denial %+v", d[len(d)-1])
	}
}

func TestIntentIgnoreExempts(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "", map[string]string{".intentignore": "build/\n*.log\n", "README.md": "x\n"})
	e.MustSh("mkdir -p build/obj && echo o > build/obj/a.o && echo l > run.log")
	e.MustDeny("echo x > README.md")
	for _, r := range e.Records() {
		if p := r.Path(); strings.HasPrefix(p, "build") || p == "run.log" {
			t.Errorf("exempt path traced: %s %s", r.Gov().Event, p)
		}
	}
}
