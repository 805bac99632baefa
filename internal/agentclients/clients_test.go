package agentclients

import (
	"runtime"
	"strings"
	"testing"
)

func TestParseVersions(t *testing.T) {
	for _, c := range []struct{ text, err string }{
		{"# c\nclaude 1.2.3\n\ncodex 0.1.0\n", ""},
		{"claude\n", "want NAME VERSION"},
		{"claude 1 2\n", "want NAME VERSION"},
		{"claude 1\nclaude 2\n", "pinned twice"},
	} {
		vs, err := ParseVersions(c.text)
		if c.err == "" && (err != nil || vs["claude"] != "1.2.3" || vs["codex"] != "0.1.0") {
			t.Errorf("%q: %v %v", c.text, vs, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.err)
		}
	}
}

func TestPinnedClientsHaveAPackage(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the clients ship for linux/amd64 and linux/arm64")
	}
	for _, name := range []string{"claude", "codex"} {
		c, err := Pinned(name)
		if err != nil {
			t.Fatal(err)
		}
		spec, member, err := c.Package()
		if err != nil || !strings.Contains(spec, "@"+c.Version) || !strings.HasSuffix(member, "/"+name) {
			t.Errorf("%s: %q %q %v", name, spec, member, err)
		}
	}
	t.Setenv("INTENTFS_AGENTS_CACHE", "/cache")
	c, _ := Pinned("claude")
	if p, err := c.Path(); err != nil || p != "/cache/claude-"+c.Version+"/claude" {
		t.Errorf("path %q %v", p, err)
	}
}
