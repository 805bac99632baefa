package agentapi

import (
	"strings"
	"testing"
)

// An operation the check file does not know must not be glued onto the
// path (it would read as part of the path's name).
func TestCheckRefusesAnUnknownOperation(t *testing.T) {
	m := FileMount{Mountpoint: t.TempDir()}
	_, err := m.DryRun("docs/guide.md", "frobnicate")
	if err == nil || !strings.Contains(err.Error(), `unknown operation "frobnicate"`) {
		t.Fatalf("Check with an unknown op: %v", err)
	}
}
