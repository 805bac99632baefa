package creds

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func needRoot(t *testing.T) *Switcher {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("switching credentials needs root")
	}
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// threadStatus returns a field of /proc/thread-self/status.
func threadStatus(t *testing.T, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("no %s in /proc/thread-self/status", field)
	return ""
}

func TestRunActsWithTheCallersPermissions(t *testing.T) {
	s := needRoot(t)
	dir := t.TempDir()
	// The user must be able to reach the directory: TempDir's parent is
	// private to root.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(dir, "secret")
	groupFile := filepath.Join(dir, "group-readable")
	for _, f := range []string{secret, groupFile} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(groupFile, 0, 4242); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(groupFile, 0o040); err != nil {
		t.Fatal(err)
	}
	user := Caller{Uid: 1000, Gid: 1000}
	member := Caller{Uid: 1000, Gid: 1000, Groups: []uint32{4242}}
	open := func(p string, flags int) func() error {
		return func() error {
			fd, err := syscall.Open(p, flags|syscall.O_CLOEXEC, 0o644)
			if err == nil {
				syscall.Close(fd)
			}
			return err
		}
	}
	tests := []struct {
		name    string
		as      Caller
		fn      func() error
		wantErr error
	}{
		{"root-only file, as a user", user, open(secret, syscall.O_RDONLY), syscall.EACCES},
		{"group-readable, not a member", user, open(groupFile, syscall.O_RDONLY), syscall.EACCES},
		{"group-readable, member", member, open(groupFile, syscall.O_RDONLY), nil},
		{"root-only file, as root", Caller{}, open(secret, syscall.O_RDONLY), nil},
		{"create in a shared dir", user, open(filepath.Join(dir, "new"), syscall.O_CREAT|syscall.O_WRONLY), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Run(tt.as, tt.fn)
			if !errors.Is(err, tt.wantErr) && !(err == nil && tt.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "new"), &st); err != nil || st.Uid != 1000 || st.Gid != 1000 {
		t.Fatalf("a file created as 1000:1000 is %d:%d (%v)", st.Uid, st.Gid, err)
	}
	// Afterwards the daemon is root again.
	if err := open(secret, syscall.O_RDWR)(); err != nil {
		t.Fatalf("after Run, root cannot open its own file: %v", err)
	}
}

func TestRunDropsCapabilitiesOnlyOnItsThread(t *testing.T) {
	s := needRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ownCaps := threadStatus(t, "CapEff")
	var inside struct{ caps, fsuid, groups string }
	err := s.Run(Caller{Uid: 1000, Gid: 1001, Groups: []uint32{7, 8}}, func() error {
		inside.caps = threadStatus(t, "CapEff")
		inside.fsuid = threadStatus(t, "Uid")
		inside.groups = threadStatus(t, "Groups")
		// Meanwhile another thread is still root.
		var wg sync.WaitGroup
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if other := threadStatus(t, "Uid"); other != "0 0 0 0" {
				t.Errorf("another thread's uids are %q while one thread runs as a caller", other)
			}
		})
		wg.Wait()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if inside.caps != "0000000000000000" {
		t.Errorf("effective capabilities inside Run = %s, want none", inside.caps)
	}
	if inside.fsuid != "0 0 0 1000" {
		t.Errorf("uids inside Run = %q, want real, effective and saved 0, fs 1000", inside.fsuid)
	}
	if inside.groups != "7 8" {
		t.Errorf("groups inside Run = %q", inside.groups)
	}
	if got := threadStatus(t, "CapEff"); got != ownCaps {
		t.Errorf("capabilities after Run = %s, want %s", got, ownCaps)
	}
	if got := threadStatus(t, "Uid"); got != "0 0 0 0" {
		t.Errorf("uids after Run = %q", got)
	}
}

func TestParseGroups(t *testing.T) {
	tests := []struct {
		status  string
		want    []uint32
		wantErr bool
	}{
		{"Name:\tsh\nGroups:\t4 24 1000 \nNSpid:\t1\n", []uint32{4, 24, 1000}, false},
		{"Groups:\t\n", nil, false},
		{"Name:\tsh\n", nil, true},
		{"Groups:\t4 x\n", nil, true},
		{"Groups:\t99999999999\n", nil, true},
	}
	for _, tt := range tests {
		got, err := parseGroups([]byte(tt.status))
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("parseGroups(%q) = %v, %v; want %v, error %v", tt.status, got, err, tt.want, tt.wantErr)
		}
	}
	if gs, err := ReadGroups(uint32(os.Getpid())); err != nil {
		t.Errorf("ReadGroups(self): %v", err)
	} else if own, _ := os.Getgroups(); len(gs) != len(own) {
		t.Errorf("ReadGroups(self) = %v, getgroups = %v", gs, own)
	}
}
