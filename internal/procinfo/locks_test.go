package procinfo

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestParseLocks(t *testing.T) {
	table := `1: FLOCK  ADVISORY  WRITE 1234 00:2a:77 0 EOF
1: -> FLOCK  ADVISORY  WRITE 999 00:2a:77 0 EOF
2: POSIX  ADVISORY  READ 55 00:2a:78 0 EOF
3: OFDLCK ADVISORY  WRITE -1 00:2a:77 0 EOF
4: POSIX  ADVISORY  WRITE 66 00:2b:77 0 EOF
garbage
`
	cases := []struct {
		name         string
		major, minor uint32
		ino          uint64
		want         []LockHolder
	}{
		{"holders, not waiters", 0, 0x2a, 77, []LockHolder{{Kind: "FLOCK", Pid: 1234}, {Kind: "OFDLCK", Pid: -1}}},
		{"another inode", 0, 0x2a, 78, []LockHolder{{Kind: "POSIX", Pid: 55}}},
		{"another device", 0, 0x2c, 77, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseLocks(strings.NewReader(table), c.major, c.minor, c.ino)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestLockHoldersNamesThisProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	hs, err := LockHolders(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Pid != os.Getpid() || hs[0].Kind != "FLOCK" || hs[0].Comm == "" {
		t.Fatalf("holders %+v, want this process's FLOCK", hs)
	}
}
