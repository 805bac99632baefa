package fence

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// controlReader reads .intentfs/active and the start of
// .intentfs/context again and again, and prints every read that is not
// its own session's ($1 is its intent), then how many reads it made. It
// lists the directory with its attributes now and then (a READDIRPLUS,
// which must not hand out its inodes either).
const controlReader = `want=$1; i=0; mix=0
while [ $i -lt 300 ]; do
  [ $((i % 10)) -eq 0 ] && ls -l .intentfs >/dev/null
  got=$(cat .intentfs/active)
  [ "$got" = "$want" ] || { echo "MIX active: $got"; mix=$((mix+1)); }
  case "$(head -c 400 .intentfs/context)" in *"$want"*) ;; *) echo "MIX context"; mix=$((mix+1)) ;; esac
  i=$((i+1))
done
echo "reads=$i mixed=$mix"`

// TestCachedSessionsReadOnlyTheirOwnControlFiles: on the cached data
// path the kernel reads .intentfs/ files through its page cache, with no
// OPEN. Two sessions of different intents read their .intentfs/active
// and .intentfs/context at the same time, again and again: each must
// read its own session's every time, never the other's (with one page
// cache per file, a read could return what was computed for the other
// session).
func TestCachedSessionsReadOnlyTheirOwnControlFiles(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	t.Setenv("INTENTFS_DATA_PATH", "cached")
	e := testenv.MountForSessions(t, "")
	// The session's /tmp is its own: the script goes on the command line.
	one := e.Session("--intent", "INT-001", "--name", "one", "--", "sh", "-c", controlReader, "reader", "INT-001")
	var oneOut strings.Builder
	one.Stdout, one.Stderr = &oneOut, &oneOut
	if err := one.Start(); err != nil {
		t.Fatal(err)
	}
	twoOut, code := e.RunSession("--intent", "INT-002", "--name", "two", "--", "sh", "-c", controlReader, "reader", "INT-002")
	if err := one.Wait(); err != nil {
		t.Fatalf("session one: %v\n%s", err, oneOut.String())
	}
	for name, out := range map[string]string{"one": oneOut.String(), "two": twoOut} {
		if strings.Contains(out, "MIX") || !strings.Contains(out, "reads=300 mixed=0") {
			t.Errorf("session %s read what is not its own:\n%s", name, out)
		}
	}
	if code != 0 {
		t.Errorf("session two exited %d:\n%s", code, twoOut)
	}
}
