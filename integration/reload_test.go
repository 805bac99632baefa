package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/policy"
)

func TestPolicyEditTakesEffectWithinASecond(t *testing.T) {
	// Serial: asserts a one-second latency, which a loaded machine would break.
	e := mount(t, scopePolicy, "INT-001", seedTree)
	// A new file in a directory the scope owns nothing of: a new name
	// beside docs/api.md would be a provisional file (see
	// atomic_save_test.go), refused only when it is renamed or removed.
	e.mustDeny("mkdir docs/sub")
	edited := strings.Replace(scopePolicy, `["src/**", "docs/api.md"]`, `["src/**", "docs/**"]`, 1)
	writeFile(t, filepath.Join(e.src, policy.IntentsFile), edited)
	edit := time.Now()
	for {
		if _, err := e.sh("mkdir -p docs/sub && echo x > docs/sub/new.md"); err == nil {
			break
		}
		if time.Since(edit) > time.Second {
			t.Fatalf("the edit did not take effect within 1s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// An invalid edit is rejected and reported; the last valid policy
	// stays in force (docs/** still allowed, nothing else opened up).
	writeFile(t, filepath.Join(e.src, policy.IntentsFile), "active_intents:\n  - id: INT-001\n    status: [\n")
	waitFor(t, func() bool { return e.d.Status().Policy.ReloadError != "" }, "the invalid edit to be reported in status")
	if msg := e.d.Status().Policy.ReloadError; !strings.Contains(msg, "active_intents.yaml:") {
		t.Errorf("reload error does not name the file and line: %s", msg)
	}
	e.mustSh("echo y > docs/new2.md")
	e.mustDeny("echo y > main.go")

	// Removing the active intent denies with UNKNOWN_INTENT, never allows.
	writeFile(t, filepath.Join(e.src, policy.IntentsFile), "active_intents:\n  - id: INT-002\n    name: other\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n")
	waitFor(t, func() bool {
		out, err := e.sh("echo z > src/z.go")
		if err == nil {
			os.Remove(filepath.Join(e.src, "src/z.go"))
		}
		return err != nil && strings.Contains(out, "Permission denied")
	}, "removing the active intent to deny a write")
	if d := e.d.Denials(nil); d[len(d)-1].Code != "UNKNOWN_INTENT" {
		t.Fatalf("last denial %+v", d[len(d)-1])
	}
}

func TestIntentIgnoreExempts(t *testing.T) {
	t.Parallel()
	e := mount(t, scopePolicy, "", map[string]string{".intentignore": "build/\n*.log\n", "README.md": "x\n"})
	e.mustSh("mkdir -p build/obj && echo o > build/obj/a.o && echo l > run.log")
	e.mustDeny("echo x > README.md")
	for _, r := range e.records() {
		if p := r.Path(); strings.HasPrefix(p, "build") || p == "run.log" {
			t.Errorf("exempt path traced: %s %s", r.Gov().Event, p)
		}
	}
}
