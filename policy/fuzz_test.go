package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The policy file, the ignore files and the paths a change names are all
// shaped by whoever writes the workspace. These targets hold the parser
// and the decision to what must be true for any input: no panic, errors
// that name a position, and built-in protections that no glob lifts.

func FuzzParseIntents(f *testing.F) {
	f.Add([]byte(decidePolicy))
	f.Add([]byte("active_intents:\n  - id: INT-001\n    name: x\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n"))
	f.Add([]byte("active_intents: [{id: INT-1, name: a, status: PENDING, owned_scope: ['a/[!_]*'], parent: INT-2}]"))
	f.Add([]byte("active_intents:\n  - &a {id: INT-001}\n  - *a\n"))
	f.Add([]byte("\xff\xfe: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, diags, err := ParseIntents("p.yaml", data)
		for _, d := range diags {
			if d.File != "p.yaml" {
				t.Fatalf("diagnostic %v does not name the file", d)
			}
			if d.Line < 0 || d.Column < 0 {
				t.Fatalf("diagnostic %v has a negative position", d)
			}
		}
		if err != nil {
			return
		}
		for _, it := range in.List {
			if !ValidID(it.ID) {
				t.Fatalf("accepted intent with invalid id %q", it.ID)
			}
			if !it.Status.Valid() {
				t.Fatalf("accepted intent %s with invalid status %q", it.ID, it.Status)
			}
			for _, g := range it.OwnedScope {
				if err := CheckGlob(g); err != nil {
					t.Fatalf("accepted scope %q that CheckGlob rejects: %v", g, err)
				}
			}
		}
	})
}

func FuzzLoadIgnore(f *testing.F) {
	f.Add([]byte("build/\n!build/keep\n# c\n/dist\n*.log\n"), "build/x")
	f.Add([]byte("\\#literal\n**/tmp/**\n[a-\n"), "a/tmp/b")
	f.Add([]byte("\x00\n\r\n   \n!\n/\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, rel string) {
		ig, diags, err := loadIgnoreFile(t, ".intentignore", string(data))
		var ve *ValidationError
		if err != nil && !errors.As(err, &ve) && len(data) <= MaxIgnoreBytes {
			t.Fatalf("loading an ignore file failed with %v, not a *ValidationError", err)
		}
		for _, d := range diags {
			if d.Line < 1 {
				t.Fatalf("diagnostic %v has no line", d)
			}
		}
		if c, ok := CleanRel(rel); ok {
			ig.Match(c, false)
			ig.Match(c, true)
		}
	})
}

// FuzzDecide builds a policy around one fuzzed scope glob and one fuzzed
// ignore line and checks the invariants every decision keeps.
func FuzzDecide(f *testing.F) {
	f.Add("src/**", "build/", "src/a.go", "", false)
	f.Add("a/**/[!_]*", "", "a/b/_secret", "a/c", true)
	f.Add("**", "**", ".orchestration/active_intents.yaml", "", false)
	f.Add("**", "", "../etc/passwd", "x", false)
	f.Add(".orchestration/**", "!.orchestration/", ".orchestration/agent_trace.jsonl", "", false)
	f.Fuzz(func(t *testing.T, glob, ignoreLine, p1, p2 string, isDir bool) {
		g, _ := json.Marshal(glob)
		doc := "active_intents:\n  - id: INT-001\n    name: fuzz\n    status: IN_PROGRESS\n    owned_scope: [" + string(g) + "]\n"
		in, _, err := ParseIntents("p.yaml", []byte(doc))
		if err != nil {
			return
		}
		ig, _, _ := loadIgnoreFile(t, ".intentignore", ignoreLine)
		snap := &Snapshot{Intents: in, Ignore: ig}
		for _, op := range []Op{OpCreate, OpOpenWrite, OpUnlink, OpRename, OpLink, OpMkdir, OpChmod, OpSetxattr} {
			r := Request{Op: op, Path: p1, Path2: p2, IsDir: isDir, Intent: "INT-001"}
			d := snap.Decide(r)
			if !d.Allow {
				if d.Code == "" || d.Reason == "" {
					t.Fatalf("%s %q: a denial without a code or reason: %+v", op, p1, d)
				}
				continue
			}
			paths := []string{p1}
			if op == OpRename || op == OpLink {
				paths = append(paths, p2)
			}
			for _, p := range paths {
				c, ok := CleanRel(p)
				if !ok {
					t.Fatalf("%s allowed %q, which is not inside the workspace", op, p)
				}
				if c == OrchestrationDir || strings.HasPrefix(c, OrchestrationDir+"/") {
					t.Fatalf("%s allowed %q under %s/ with scope %q and ignore %q", op, p, OrchestrationDir, glob, ignoreLine)
				}
			}
		}
	})
}

func FuzzCleanRel(f *testing.F) {
	for _, s := range []string{"", ".", "a/../..", "/etc", "a//b/./c", "a\x00b", "..a", "a/..", "../"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, ok := CleanRel(p)
		if !ok {
			return
		}
		if strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(c, 0) {
			t.Fatalf("CleanRel(%q) = %q: escapes the workspace", p, c)
		}
		if c2, _ := CleanRel(c); c2 != c {
			t.Fatalf("CleanRel is not idempotent: %q -> %q -> %q", p, c, c2)
		}
	})
}
