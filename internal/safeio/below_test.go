package safeio

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReplaceBelow(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, ws, elsewhere string)
		wantErr bool
		mode    os.FileMode
		// created: the directory and file are new, so root gives them
		// the workspace's owner (an existing file keeps its own).
		created bool
	}{
		{name: "creates the directory and the file", mode: 0o644, created: true},
		{name: "keeps an existing file's mode", mode: 0o600, prepare: func(t *testing.T, ws, _ string) {
			must(t, os.Mkdir(filepath.Join(ws, ".claude"), 0o755))
			must(t, os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), []byte("{}"), 0o600))
		}},
		{name: "a symlinked directory is not followed", wantErr: true, prepare: func(t *testing.T, ws, elsewhere string) {
			must(t, os.Symlink(elsewhere, filepath.Join(ws, ".claude")))
		}},
		{name: "a symlinked file is not followed", wantErr: true, prepare: func(t *testing.T, ws, elsewhere string) {
			must(t, os.Mkdir(filepath.Join(ws, ".claude"), 0o755))
			must(t, os.Symlink(filepath.Join(elsewhere, "victim"), filepath.Join(ws, ".claude", "settings.json")))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, elsewhere := t.TempDir(), t.TempDir()
			must(t, os.WriteFile(filepath.Join(elsewhere, "victim"), []byte("victim"), 0o644))
			if os.Geteuid() == 0 {
				must(t, os.Chown(ws, 1000, 1000))
			}
			if tt.prepare != nil {
				tt.prepare(t, ws, elsewhere)
			}
			path := filepath.Join(ws, ".claude", "settings.json")
			err := ReplaceBelow(path, []byte(`{"hooks":{}}`), 0o644)
			if b, _ := os.ReadFile(filepath.Join(elsewhere, "victim")); string(b) != "victim" {
				t.Fatalf("written through a symlink: victim is %q", b)
			}
			if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
				t.Fatalf("written through a symlink: %v", ents)
			}
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != tt.mode {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), tt.mode)
			}
			if b, _ := os.ReadFile(path); string(b) != `{"hooks":{}}` {
				t.Errorf("content %q", b)
			}
			if os.Geteuid() == 0 && tt.created {
				for _, p := range []string{path, filepath.Dir(path)} {
					fi, _ := os.Stat(p)
					if sys := fi.Sys().(*syscall.Stat_t); sys.Uid != 1000 || sys.Gid != 1000 {
						t.Errorf("%s is owned by %d:%d, want the workspace's 1000:1000", p, sys.Uid, sys.Gid)
					}
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
