package sessions

import (
	"fmt"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
	"github.com/intentfs/intentfs/ledger"
)

// TestCachedSessionEndRecordsItsWritesFirst: on the cached data path a
// file's creation is recorded once its creator's writes pause, which a
// session's last command does not wait for: its root exits right after
// the write. What the session wrote must be recorded before its
// session_end, and counted for it, so that the end record's counts and
// the daemon's agree with the ledger.
func TestCachedSessionEndRecordsItsWritesFirst(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	t.Setenv("INTENTFS_DATA_PATH", "cached")
	e := testenv.MountForSessions(t, "")
	if got := e.D.Status().DataPath; got != "cached" {
		t.Fatalf("status data path %q, want cached", got)
	}
	const runs = 3
	for i := range runs {
		name := fmt.Sprintf("last-write-%d", i)
		file := fmt.Sprintf("src/last-%d.txt", i)
		out, code := e.RunSession("--intent", "INT-001", "--name", name, "--", "sh", "-c",
			"/bin/echo first > src/a.txt && /bin/echo made > "+file)
		if code != 0 {
			t.Fatalf("session %s (exit %d):\n%s", name, code, out)
		}
		// The session is listed as ended from the moment its processes
		// are no longer placed in it; its counts are final once its end
		// is recorded.
		e.WaitRecord("the end of session "+name, func(r *ledger.Record) bool {
			g := r.Gov()
			return g.Event == ledger.EventSessionEnd && g.Session != nil && g.Session.Name == name
		})
		info, ok := e.SessionNamed(name)
		if !ok || info.Live {
			t.Fatalf("session %s not listed as ended: %+v (listed %v)", name, info, ok)
		}
		// Whatever the debounce would still record comes now: nothing of
		// the session may follow its end.
		e.D.Status()
		changes, ended, created := 0, -1, -1
		for j, r := range e.Records() {
			g := r.Gov()
			if g.Session == nil || g.Session.ID != info.ID {
				continue
			}
			switch {
			case g.Event == ledger.EventSessionEnd:
				ended = j
				if want := fmt.Sprintf("; %d changes,", info.Changes); !strings.Contains(g.Reason, want) {
					t.Errorf("session %s: its end record says %q, the daemon counted %d changes", name, g.Reason, info.Changes)
				}
				continue
			case ended >= 0:
				t.Errorf("session %s: record %d (%s %s) comes after its session_end", name, j, g.Event, r.Path())
			}
			if ledger.ClassOf(g.Event) != "" {
				changes++
			}
			if g.Event == ledger.EventCreate && r.Path() == file {
				created = j
			}
		}
		switch {
		case ended < 0:
			t.Fatalf("session %s: no session_end record", name)
		case created < 0:
			t.Errorf("session %s: no create record of %s before its session_end", name, file)
		}
		if uint64(changes) != info.Changes {
			t.Errorf("session %s: the ledger holds %d changes of it, the daemon counted %d", name, changes, info.Changes)
		}
	}
}
