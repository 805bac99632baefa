package integration

import (
	"os"
	"testing"

	"github.com/intentfs/intentfs/internal/daemon"
)

// TestMain gives the test process the umask a daemon process needs: the
// daemons of these tests run in it.
func TestMain(m *testing.M) {
	daemon.SetProcessUmask()
	os.Exit(m.Run())
}
