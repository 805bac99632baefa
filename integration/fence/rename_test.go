package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
)

func TestRenameFlags(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/a": "A\n", "src/b": "B\n", "README.md": "R\n"})
	p := func(rel string) string { return filepath.Join(e.Mnt, rel) }
	tests := []struct {
		name     string
		from, to string
		flags    uint
		want     error
	}{
		{"noreplace onto existing", "src/a", "src/b", unix.RENAME_NOREPLACE, syscall.EEXIST},
		{"exchange out of scope", "src/a", "README.md", unix.RENAME_EXCHANGE, syscall.EACCES},
		{"exchange in scope", "src/a", "src/b", unix.RENAME_EXCHANGE, nil},
		{"noreplace to new name", "src/a", "src/c", unix.RENAME_NOREPLACE, nil},
	}
	for _, tt := range tests {
		err := unix.Renameat2(unix.AT_FDCWD, p(tt.from), unix.AT_FDCWD, p(tt.to), tt.flags)
		if err != tt.want {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if got, _ := e.SrcContent("src/b"); got != "A\n" {
		t.Errorf("after exchange src/b = %q", got)
	}
	if got, _ := e.SrcContent("src/c"); got != "B\n" {
		t.Errorf("src/c = %q", got)
	}
	if got, _ := e.SrcContent("README.md"); got != "R\n" {
		t.Errorf("README.md = %q", got)
	}
	e.WaitRecord("exchange", func(r *ledger.Record) bool { return r.Gov().Event == ledger.EventRename && r.Path() == "src/b" })
}
