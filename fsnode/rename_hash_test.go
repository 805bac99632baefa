package fsnode_test

import (
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
)

// An editor's save (write a temporary file, rename it over the original)
// hashes each version's bytes once: the temporary file at its release,
// the replaced file for its pre-image. The rename reuses the release's
// digest, and its record still carries both hashes and the change by line.
func TestRenameOverFileHashesEachVersionOnce(t *testing.T) {
	const old, saved = "package a\n\nfunc F() {}\n", "package a\n\nfunc F() {}\n// edited\n"
	tests := []struct {
		name, content string
		wantRanges    []ledger.Range
		wantClass     ledger.MutationClass
	}{
		{"a comment added", saved, []ledger.Range{{StartLine: 4, EndLine: 4}}, ledger.ClassDocumentation},
		{"emptied", "", []ledger.Range{}, ledger.ClassEvolution},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKernel(t, map[string]string{"src/a.go": old})
			if st := k.create("src/a.go.tmp", tt.content); st != fuse.OK {
				t.Fatalf("create: %v", st)
			}
			before := k.root.Hashes().BytesHashed()
			if st := k.rename("src/a.go.tmp", "src/a.go", 0); st != fuse.OK {
				t.Fatalf("rename: %v", st)
			}
			if hashed := k.root.Hashes().BytesHashed() - before; hashed != uint64(len(old)) {
				t.Errorf("the rename hashed %d bytes, want %d (the replaced file's alone)", hashed, len(old))
			}
			k.gov.mu.Lock()
			c := k.gov.records[len(k.gov.records)-1]
			k.gov.mu.Unlock()
			if c.Event != ledger.EventRename || c.PreHash != sha(old) || c.PostHash != sha(tt.content) {
				t.Fatalf("record %s %s pre %s post %s, want a rename from %s to %s", c.Event, c.Path, c.PreHash, c.PostHash, sha(old), sha(tt.content))
			}
			ranges, class := c.Ranges, c.Class
			if c.Attribute != nil {
				ranges, class = c.Attribute()
			}
			for i := range ranges {
				ranges[i].ContentHash = ""
			}
			if !slices.Equal(ranges, tt.wantRanges) || class != tt.wantClass {
				t.Errorf("described as %v %q, want %v %q", ranges, class, tt.wantRanges, tt.wantClass)
			}
		})
	}
}

// An editor saving the same file again and again hashes each saved
// version once, at its release: the next save's pre-image is that version,
// renamed since, and its digest is still known.
func TestRepeatedSavesHashEachVersionOnce(t *testing.T) {
	content := "package a\n"
	k := newKernel(t, map[string]string{"src/a.go": content})
	for i := range 4 {
		content += "// another line\n"
		before := k.root.Hashes().BytesHashed()
		if st := k.create("src/a.go.tmp", content); st != fuse.OK {
			t.Fatalf("save %d: create: %v", i, st)
		}
		if st := k.rename("src/a.go.tmp", "src/a.go", 0); st != fuse.OK {
			t.Fatalf("save %d: rename: %v", i, st)
		}
		want := uint64(len(content)) // the saved version, at its release
		if i == 0 {
			want += uint64(len("package a\n")) // the file as it was, never hashed before
		}
		if hashed := k.root.Hashes().BytesHashed() - before; hashed != want {
			t.Errorf("save %d hashed %d bytes, want %d", i, hashed, want)
		}
	}
	if got, _ := k.onDisk("src/a.go"); got != content {
		t.Fatalf("source holds %q", got)
	}
}
