package fsnode

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRenameFlagsRefused(t *testing.T) {
	cases := []struct {
		name    string
		flags   uint32
		refused bool
		says    string
	}{
		{"none", 0, false, ""},
		{"noreplace", unix.RENAME_NOREPLACE, false, ""},
		{"exchange", unix.RENAME_EXCHANGE, false, ""},
		{"whiteout", unix.RENAME_WHITEOUT, true, "RENAME_WHITEOUT"},
		{"whiteout with noreplace", unix.RENAME_WHITEOUT | unix.RENAME_NOREPLACE, true, "RENAME_WHITEOUT"},
		{"unknown", 1 << 7, true, "0x80"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reason, refused := renameFlagsRefused(c.flags)
			if refused != c.refused || !strings.Contains(reason, c.says) {
				t.Fatalf("renameFlagsRefused(%#x) = %q, %v", c.flags, reason, refused)
			}
		})
	}
}
