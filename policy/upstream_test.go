package policy

import (
	"strings"
	"testing"
)

const minimalIntents = "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [src/**]\n"

func TestParseUpstream(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string // appended to minimalIntents (lines 6 on)
		wantURL  string
		wantRef  string
		wantNone bool
		err      string // an error diagnostic containing this
		line     int
		warn     string // a warning containing this
	}{
		{name: "absent", yaml: "", wantNone: true},
		{name: "path, default ref", yaml: "upstream:\n  url: /srv/repos/project.git\n", wantURL: "/srv/repos/project.git", wantRef: "refs/heads/main"},
		{name: "short ref", yaml: "upstream:\n  url: /srv/p.git\n  ref: release/1.x\n", wantURL: "/srv/p.git", wantRef: "refs/heads/release/1.x"},
		{name: "full ref", yaml: "upstream:\n  url: /srv/p.git\n  ref: refs/tags/v1.0\n", wantURL: "/srv/p.git", wantRef: "refs/tags/v1.0"},
		{name: "file url", yaml: "upstream: {url: \"file:///srv/p.git\"}\n", wantURL: "file:///srv/p.git", wantRef: "refs/heads/main"},
		{name: "https", yaml: "upstream: {url: \"https://git.example.com/org/p.git\"}\n", wantURL: "https://git.example.com/org/p.git", wantRef: "refs/heads/main"},
		{name: "ssh", yaml: "upstream: {url: \"ssh://git@example.com:2222/org/p.git\"}\n", wantURL: "ssh://git@example.com:2222/org/p.git", wantRef: "refs/heads/main"},
		{name: "scp-like", yaml: "upstream: {url: \"git@example.com:org/p.git\"}\n", wantURL: "git@example.com:org/p.git", wantRef: "refs/heads/main"},
		{name: "unknown field warns", yaml: "upstream:\n  url: /srv/p.git\n  branch: main\n", wantURL: "/srv/p.git", wantRef: "refs/heads/main", warn: `unknown upstream field "branch"`},
		{name: "not a mapping", yaml: "upstream: /srv/p.git\n", err: "must be a mapping", line: 6},
		{name: "no url", yaml: "upstream:\n  ref: main\n", err: "needs a `url:`", line: 7},
		{name: "empty url", yaml: "upstream:\n  url: \"\"\n", err: "non-empty", line: 7},
		{name: "option injection", yaml: "upstream:\n  url: \"--upload-pack=touch /tmp/x\"\n", err: "read as an option", line: 7},
		{name: "newline", yaml: "upstream:\n  url: \"/srv/p.git\\n--upload-pack=x\"\n", err: "control character", line: 7},
		{name: "http refused", yaml: "upstream:\n  url: http://example.com/p.git\n", err: "use https://", line: 7},
		{name: "git protocol refused", yaml: "upstream:\n  url: git://example.com/p.git\n", err: "does not authenticate", line: 7},
		{name: "ext helper refused", yaml: "upstream:\n  url: \"ext::sh -c touch% /tmp/x\"\n", err: "remote helper", line: 7},
		{name: "other scheme", yaml: "upstream:\n  url: ftp://example.com/p.git\n", err: "ftp:// transport is not allowed", line: 7},
		{name: "relative path", yaml: "upstream:\n  url: ../p.git\n", err: "relative path", line: 7},
		{name: "file url relative", yaml: "upstream:\n  url: file://p.git\n", err: "absolute path", line: 7},
		{name: "ssh host option", yaml: "upstream:\n  url: \"ssh://-oProxyCommand=x/p.git\"\n", err: "starting with '-'", line: 7},
		{name: "scp host option", yaml: "upstream:\n  url: \"git@-oProxyCommand=x:p.git\"\n", err: "starting with '-'", line: 7},
		{name: "password in url", yaml: "upstream:\n  url: \"https://me:secret@example.com/p.git\"\n", err: "password", line: 7},
		{name: "https without host", yaml: "upstream:\n  url: \"https:///p.git\"\n", err: "needs a host", line: 7},
		{name: "ref with ..", yaml: "upstream:\n  url: /srv/p.git\n  ref: a..b\n", err: "'..'", line: 8},
		{name: "ref with space", yaml: "upstream:\n  url: /srv/p.git\n  ref: \"a b\"\n", err: "spaces", line: 8},
		{name: "ref with colon", yaml: "upstream:\n  url: /srv/p.git\n  ref: \"main:refs/heads/x\"\n", err: "~^:?*[", line: 8},
		{name: "ref .lock", yaml: "upstream:\n  url: /srv/p.git\n  ref: main.lock\n", err: ".lock", line: 8},
		{name: "ref trailing slash", yaml: "upstream:\n  url: /srv/p.git\n  ref: main/\n", err: "end with", line: 8},
		{name: "ref @{", yaml: "upstream:\n  url: /srv/p.git\n  ref: \"main@{1}\"\n", err: "'@{'", line: 8},
		{name: "ref option", yaml: "upstream:\n  url: /srv/p.git\n  ref: \"-x\"\n", err: "start with '-'", line: 8},
		{name: "ref HEAD", yaml: "upstream:\n  url: /srv/p.git\n  ref: HEAD\n", err: "not HEAD", line: 8},
		{name: "ref empty component", yaml: "upstream:\n  url: /srv/p.git\n  ref: refs/heads//main\n", err: "empty component", line: 8},
		{name: "ref dot component", yaml: "upstream:\n  url: /srv/p.git\n  ref: refs/heads/.x\n", err: "start with '.'", line: 8},
		{name: "ref only refs/", yaml: "upstream:\n  url: /srv/p.git\n  ref: refs/\n", err: "end with", line: 8},
		{name: "ref a list", yaml: "upstream:\n  url: /srv/p.git\n  ref: [main]\n", err: "must be a string", line: 8},
		{name: "url twice", yaml: "upstream:\n  url: /a.git\n  url: /b.git\n", err: `field "url" appears twice in upstream`, line: 8},
		{name: "twice", yaml: "upstream: {url: /a.git}\nupstream: {url: /b.git}\n", err: "appears twice", line: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, diags, err := ParseIntents("p.yaml", []byte(minimalIntents+tc.yaml))
			if tc.err != "" {
				if err == nil {
					t.Fatalf("no error, upstream %+v", got.Upstream)
				}
				for _, d := range diags {
					if d.Severity == SevError && strings.Contains(d.Message, tc.err) {
						if d.Line != tc.line || d.File != "p.yaml" {
							t.Errorf("diagnostic at %s:%d, want line %d", d.File, d.Line, tc.line)
						}
						return
					}
				}
				t.Fatalf("no error containing %q in %v", tc.err, diags)
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.warn != "" {
				found := false
				for _, d := range diags {
					found = found || (d.Severity == SevWarning && strings.Contains(d.Message, tc.warn))
				}
				if !found {
					t.Errorf("no warning containing %q in %v", tc.warn, diags)
				}
			} else if len(diags) != 0 {
				t.Errorf("unexpected diagnostics %v", diags)
			}
			if tc.wantNone {
				if got.Upstream != nil {
					t.Fatalf("upstream %+v, want none", got.Upstream)
				}
				return
			}
			if u := got.Upstream; u == nil || u.URL != tc.wantURL || u.Ref != tc.wantRef || u.Line != 6 {
				t.Fatalf("upstream %+v, want %s %s on line 6", u, tc.wantURL, tc.wantRef)
			}
		})
	}
}

// TestUnknownTopLevelKeyNamesUpstream: the warning for a misspelt key
// lists upstream among the expected ones.
func TestUnknownTopLevelKeyNamesUpstream(t *testing.T) {
	_, diags, err := ParseIntents("p.yaml", []byte(minimalIntents+"upstreams: {url: /a.git}\n"))
	if err != nil || len(diags) != 1 || !strings.Contains(diags[0].Message, "`upstream`") {
		t.Fatalf("diags %v, err %v", diags, err)
	}
}
