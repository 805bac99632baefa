package container

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func fakeHost(fuseDev string, caps uint64, mountErr error, label string) host {
	return host{
		fuseDev:    fuseDev,
		capEff:     func() (uint64, error) { return caps, nil },
		probeMount: func() error { return mountErr },
		label:      func() string { return label },
	}
}

const allCaps = ^uint64(0)

// TestPreflightNamesTheMissingFlag: each way a container can be started
// without what the mount needs is named with the docker run flag that
// gives it, and only the missing ones are named.
func TestPreflightNamesTheMissingFlag(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "fuse")
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// /dev/null stands in for a device node the container may open.
	device := "/dev/null"
	noSysAdmin := allCaps &^ (1 << capSysAdmin)
	cases := []struct {
		name string
		h    host
		want []string
		not  []string
	}{
		{"everything there", fakeHost(device, allCaps, nil, "unconfined"), nil, nil},
		{"no /dev/fuse", fakeHost(missing, allCaps, nil, ""), []string{"does not exist", "add --device /dev/fuse"},
			[]string{"add --cap-add", "add --security-opt"}},
		{"not a device", fakeHost(regular, allCaps, nil, ""), []string{"add --device /dev/fuse"}, nil},
		{"no SYS_ADMIN", fakeHost(device, noSysAdmin, unix.EPERM, ""), []string{"lacks CAP_SYS_ADMIN", "add --cap-add SYS_ADMIN"},
			[]string{"add --device", "add --security-opt", "seccomp"}},
		{"neither", fakeHost(missing, noSysAdmin, unix.EPERM, ""), []string{"add --device /dev/fuse", "add --cap-add SYS_ADMIN"}, nil},
		{"AppArmor", fakeHost(device, allCaps, unix.EACCES, "docker-default (enforce)"),
			[]string{`AppArmor profile "docker-default (enforce)"`, "add --security-opt apparmor=unconfined"}, []string{"add --cap-add", "add --device"}},
		{"SELinux", fakeHost(device, allCaps, unix.EACCES, "system_u:system_r:container_t:s0:c1,c2"),
			[]string{"SELinux", "add --security-opt label=disable"}, []string{"apparmor=unconfined\n"}},
		{"seccomp", fakeHost(device, allCaps, unix.EPERM, ""), []string{"seccomp=unconfined"}, []string{"add --cap-add"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := preflight(c.h)
			if c.want == nil {
				if err != nil {
					t.Fatalf("preflight: %v", err)
				}
				return
			}
			var se *SetupError
			if !errors.As(err, &se) {
				t.Fatalf("preflight = %v, want a SetupError", err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			for _, n := range c.not {
				if strings.Contains(msg, n) {
					t.Errorf("message has %q:\n%s", n, msg)
				}
			}
			if !strings.Contains(msg, "docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN") {
				t.Errorf("message lacks the whole command line:\n%s", msg)
			}
		})
	}
}

func TestParseCapEff(t *testing.T) {
	got, err := parseCapEff("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t00000000a80425fb\nCapBnd:\t0\n")
	if err != nil || got != 0xa80425fb {
		t.Fatalf("parseCapEff = %x, %v", got, err)
	}
	// Docker's default set has no CAP_SYS_ADMIN.
	if got&(1<<capSysAdmin) != 0 {
		t.Fatal("docker's default capabilities read as having CAP_SYS_ADMIN")
	}
	if _, err := parseCapEff("Name:\tx\n"); err == nil {
		t.Fatal("a status without CapEff parsed")
	}
}
