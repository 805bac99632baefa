package daemon

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestAssembleFailsCleanly: a mount that cannot be assembled returns
// why, having undone what it set up, and leaves a mount already serving
// the source as it was.
func TestAssembleFailsCleanly(t *testing.T) {
	held := openDaemon(t, testPolicy)
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"a lessons file outside .orchestration/", Config{Source: t.TempDir(), LessonsFile: "../CLAUDE.md"}, "must be a file name"},
		{"a source another mount holds", Config{Source: held.cfg.Source}, "already mounted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Mountpoint, tt.cfg.Log, tt.cfg.Version = filepath.Join(t.TempDir(), "mnt"), log, "test"
			d, undo, err := assemble(tt.cfg, nil, nil)
			if err == nil {
				undo()
				t.Fatalf("assembled %+v", d)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
	held.gov.Record(ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001"})
	if err := held.FlushLedger(); err != nil {
		t.Fatalf("the mount that holds the source cannot record after a failed second one: %v", err)
	}
}
