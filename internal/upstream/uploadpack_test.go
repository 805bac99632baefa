package upstream

import (
	"os/exec"
	"strings"
	"testing"
)

// TestUploadPack: a local upstream's path reaches upload-pack's
// safe.directory as one word, whatever it holds; a remote gets git's
// upload-pack as is.
func TestUploadPack(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://example.com/x.git", "git-upload-pack"},
		{"user@host:x.git", "git-upload-pack"},
		{"/srv/it's $(touch pwned) `x`.git", "git|-c|safe.directory=/srv/it's $(touch pwned) `x`.git|-c|safe.directory=/srv/it's $(touch pwned) `x`.git/.git|upload-pack"},
		{"file:///srv/up.git", "git|-c|safe.directory=/srv/up.git|-c|safe.directory=/srv/up.git/.git|upload-pack"},
	} {
		cmd := uploadPack(tc.url)
		// The shell splits it as git's transport will: print the words.
		out, err := exec.Command("sh", "-c", `for w in `+cmd+`; do printf '%s\n' "$w"; done`).Output()
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		if got := strings.Join(strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), "|"); got != tc.want {
			t.Errorf("uploadPack(%q) = %q,\nsplit by sh: %q,\nwant %q", tc.url, cmd, got, tc.want)
		}
	}
}
