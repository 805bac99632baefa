package runner

import (
	"slices"
	"strings"
	"testing"
)

const sampleMountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
40 22 254:0 /work/repo /mnt/bound rw,relatime shared:1 - ext4 /dev/vda rw
41 22 254:0 /work /srv/work\040dir rw,relatime shared:1 - ext4 /dev/vda rw
42 22 254:0 /work/repo/src /opt/src rw,relatime shared:1 - ext4 /dev/vda rw
43 22 254:0 /var/lib/x/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw
44 22 0:50 / /tmp rw - tmpfs tmpfs rw
`

func TestParseMountinfo(t *testing.T) {
	entries, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 7 {
		t.Fatalf("%d entries", len(entries))
	}
	tests := []struct {
		i                  int
		major, minor       uint32
		root, point, fstyp string
	}{
		{0, 254, 0, "/", "/", "ext4"},
		{1, 0, 25, "/", "/proc", "proc"},
		{3, 254, 0, "/work", "/srv/work dir", "ext4"},
		{6, 0, 50, "/", "/tmp", "tmpfs"},
	}
	for _, tt := range tests {
		e := entries[tt.i]
		if e.Major != tt.major || e.Minor != tt.minor || e.Root != tt.root || e.Point != tt.point || e.FSType != tt.fstyp {
			t.Errorf("entry %d = %+v", tt.i, e)
		}
	}
	for _, bad := range []string{"1 2 3\n", "22 1 254 / / rw - ext4 x rw\n", "22 1 254:0 / / rw shared:1 ext4 /dev/vda rw x\n"} {
		if _, err := parseMountinfo(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestExposures(t *testing.T) {
	entries, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	in, err := sourceInFS(entries, 254, 0, "/work/repo")
	if err != nil || in != "/work/repo" {
		t.Fatalf("sourceInFS = %q, %v", in, err)
	}
	got := exposures(entries, 254, 0, in)
	want := []string{"/work/repo", "/mnt/bound", "/srv/work dir/repo", "/opt/src"}
	if !slices.Equal(got, want) {
		t.Errorf("exposures = %q, want %q", got, want)
	}
	// Seen from a bind mount: the source's path inside its filesystem.
	if in, err := sourceInFS(entries, 254, 0, "/mnt/bound/sub"); err != nil || in != "/work/repo/sub" {
		t.Errorf("sourceInFS under a bind mount = %q, %v", in, err)
	}
	if _, err := sourceInFS(entries, 9, 9, "/x"); err == nil {
		t.Errorf("a device with no mount was found")
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{`a\040b`: "a b", `tab\011x`: "tab\tx", `back\134slash`: `back\slash`, `plain`: "plain", `end\04`: `end\04`} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
