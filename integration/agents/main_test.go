package agents

import (
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// TestMain sets the process up for the daemons these tests run (testenv.Main).
func TestMain(m *testing.M) { testenv.Main(m) }
