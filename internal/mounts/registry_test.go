package mounts

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestRegistryFind(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	self := os.Getpid()
	// findIn is Find after List has dropped dead entries.
	entries := []Entry{
		{Mountpoint: "/w/a", Source: "/s/a", Pid: self},
		{Mountpoint: "/w/b", Source: "/s/b", Pid: self},
	}
	tests := []struct {
		name, mount, cwd string
		list             []Entry
		want             string
		errIs            error
		errHas           string
	}{
		{"by flag", "/w/b", "/", entries, "/w/b", nil, ""},
		{"by cwd inside", "", "/w/a/src/x", entries, "/w/a", nil, ""},
		{"cwd prefix is not inside", "", "/w/ab", entries, "", nil, "several mounts"},
		{"only one", "", "/", entries[:1], "/w/a", nil, ""},
		{"none", "", "/", nil, "", ErrNoMount, ""},
		{"flag not a mount", "/w/c", "/", entries, "", nil, "running mounts:\n  /w/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.findIn(tt.list, tt.mount, tt.cwd)
			switch {
			case tt.errIs != nil:
				if !errors.Is(err, tt.errIs) {
					t.Fatalf("err = %v, want %v", err, tt.errIs)
				}
			case tt.errHas != "":
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.errHas)
				}
			default:
				if err != nil || got.Mountpoint != tt.want {
					t.Fatalf("got %q, %v; want %q", got.Mountpoint, err, tt.want)
				}
			}
		})
	}
}

func TestRegistryDropsDeadDaemons(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	if err := r.Register(Entry{Mountpoint: "/nowhere", Pid: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	list, err := r.List()
	if err != nil || len(list) != 0 {
		t.Fatalf("list = %v, %v", list, err)
	}
	entry, _, _ := r.Paths("/nowhere")
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Fatal("stale entry not removed")
	}
}

func TestUnescapeMount(t *testing.T) {
	tests := map[string]string{`/a/b`: "/a/b", `/with\040space`: "/with space", `/tab\011x`: "/tab\tx"}
	for in, want := range tests {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q", in, got)
		}
	}
}
