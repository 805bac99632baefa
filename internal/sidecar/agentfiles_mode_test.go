package sidecar

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAgentFilesNewFileSharesTheWorkspacesGroupWrite: a checkout shared
// with the agent through a group-writable directory (the setup
// docs/doctor-and-permissions.md describes) gets a new agent file the
// group may write too, so that intentfs doctor does not report the
// file intentfs made as one the agent may not write; elsewhere it stays
// 0644.
func TestAgentFilesNewFileSharesTheWorkspacesGroupWrite(t *testing.T) {
	tests := []struct {
		name    string
		srcMode os.FileMode
		want    os.FileMode
	}{
		{"group-writable checkout", 0o2775, 0o664},
		{"group-writable without setgid", 0o775, 0o664},
		{"private checkout", 0o755, 0o644},
		{"world-writable checkout: the group writes, others do not", 0o777, 0o664},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			if err := os.Chmod(src, tc.srcMode); err != nil {
				t.Fatal(err)
			}
			a := &AgentFiles{Source: src, Guide: "# Guide"}
			if err := a.Publish(); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(filepath.Join(src, "CLAUDE.md"))
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != tc.want {
				t.Errorf("CLAUDE.md in a %04o checkout: mode %04o, want %04o", tc.srcMode, got, tc.want)
			}
		})
	}
}
