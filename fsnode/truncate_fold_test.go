package fsnode_test

import (
	"os"
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestTruncateThroughTheWritersHandle: a truncate the writer makes
// through its own handle (vim's backupcopy=yes: open, ftruncate, write)
// is part of that handle's change, recorded once at release against the
// content before the truncate; a truncate by name, or by another process
// through the handle, is recorded on its own.
func TestTruncateThroughTheWritersHandle(t *testing.T) {
	const before, after = "h1\nh2\n", "h1\nh2\nagent\n"
	tests := []struct {
		name string
		// byName truncates by path (no handle); otherPid truncates
		// through the handle as another process.
		byName, otherPid bool
		content          string // written after the truncate
		want             []string
		wantPre          string // content the last record starts from
	}{
		{name: "the writer's own truncate and rewrite", content: after, want: []string{"write src/a.go"}, wantPre: before},
		{name: "rewritten with the same bytes", content: before, want: nil},
		{name: "emptied and left so", content: "", want: []string{"write src/a.go"}, wantPre: before},
		{name: "a truncate by name", byName: true, content: after, want: []string{"truncate src/a.go", "write src/a.go"}, wantPre: ""},
		{name: "another process's truncate", otherPid: true, content: after, want: []string{"truncate src/a.go", "write src/a.go"}, wantPre: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKernel(t, map[string]string{"src/a.go": before})
			id := k.mustNode("src/a.go")
			var out fuse.OpenOut
			if st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(id), Flags: uint32(os.O_WRONLY)}, &out); st != fuse.OK {
				t.Fatal(st)
			}
			in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: k.header(id), Valid: fuse.FATTR_SIZE | fuse.FATTR_FH, Fh: out.Fh}}
			if tt.byName {
				in.Valid, in.Fh = fuse.FATTR_SIZE, 0
			}
			if tt.otherPid {
				in.Caller.Pid++
			}
			var attr fuse.AttrOut
			if st := k.raw.SetAttr(nil, &in, &attr); st != fuse.OK {
				t.Fatal(st)
			}
			if st := k.writeAndRelease(id, out.Fh, tt.content); st != fuse.OK {
				t.Fatal(st)
			}
			recs, _ := k.gov.take()
			if got := summary(recs); !slices.Equal(got, tt.want) {
				t.Fatalf("records %v, want %v", got, tt.want)
			}
			if got, _ := k.onDisk("src/a.go"); got != tt.content {
				t.Fatalf("src/a.go holds %q, want %q", got, tt.content)
			}
			if len(recs) == 0 {
				return
			}
			last := recs[len(recs)-1]
			wantPre := sha(tt.wantPre) // "": the emptied file
			if last.PreHash != wantPre || last.PostHash != sha(tt.content) {
				t.Fatalf("last record: pre %s post %s, want pre %s post %s", last.PreHash, last.PostHash, wantPre, sha(tt.content))
			}
			if tt.wantPre != "" && last.PreImage != "stored" {
				t.Fatalf("the version before the truncate was not kept: pre_image %q", last.PreImage)
			}
		})
	}
}
