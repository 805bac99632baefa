package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/intentfs/intentfs/internal/daemon"
)

// testBinary is the CLI binary of this test run. It is the package's only
// shared state: TestMain removes what the tests built.
var testBinary cliBinary

// TestMain gives the test process the umask a daemon process needs (the
// daemons of these tests run in it), and removes the CLI binary when the
// run ends.
func TestMain(m *testing.M) {
	daemon.SetProcessUmask()
	code := m.Run()
	testBinary.remove()
	os.Exit(code)
}

// cliBinary builds cmd/intentfs on first use, so a run of tests that need
// no binary does not pay for the build.
type cliBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func (b *cliBinary) get() (string, error) {
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "intentfs-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "intentfs")
		if out, err := exec.Command("go", "build", "-o", b.path, "../cmd/intentfs").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	return b.path, b.err
}

// remove deletes the binary, if one was built. It runs after every test,
// so no test races it.
func (b *cliBinary) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
