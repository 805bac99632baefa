package history

import (
	"fmt"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// rec is a record for a planner test: "create T", "rename T>P", "rename
// T>P pre" (over an existing P), "xattr T", …
func rec(i int, spec string) *ledger.Record {
	f := strings.Fields(spec)
	c := ledger.Change{Event: ledger.Event(f[0]), Path: f[1], PostHash: "sha256:post"}
	if from, to, ok := strings.Cut(f[1], ">"); ok {
		c.FromPath, c.Path = from, to
	}
	if len(f) > 2 && f[2] == "pre" {
		c.PreHash = "sha256:pre"
	}
	r := ledger.NewRecord(c, "test")
	r.ID = fmt.Sprintf("r%d", i)
	return r
}

func TestGroupUnits(t *testing.T) {
	tests := []struct {
		name string
		recs []string
		// want is each unit as "ID" or "ID(temp,n)", in ledger order.
		want string
	}{
		{name: "sed -i", recs: []string{"xattr a.sed", "create a.sed", "rename a.sed>a.txt pre"}, want: "r2(a.sed,3)"},
		{name: "atomic write with writes", recs: []string{"create t", "write t", "chmod t", "rename t>p pre"}, want: "r3(t,4)"},
		{name: "new file moved into place", recs: []string{"create t", "rename t>p"}, want: "r1(t,2)"},
		{name: "plain edits stay", recs: []string{"write a", "create b", "delete b"}, want: "r0 r1 r2"},
		{name: "move of an old file stays", recs: []string{"rename x>y"}, want: "r0"},
		{name: "interleaved", recs: []string{"create t", "write other", "write t", "rename t>p pre", "create n"}, want: "r1 r3(t,3) r4"},
		{name: "deleted temporary is not collapsed", recs: []string{"create t", "delete t"}, want: "r0 r1"},
		{name: "metadata before an earlier non-metadata change stays", recs: []string{"chmod t", "write t", "create t", "rename t>p pre"}, want: "r0 r1 r3(t,2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var recs []*ledger.Record
			for i, s := range tt.recs {
				recs = append(recs, rec(i, s))
			}
			var got []string
			for _, u := range groupUnits(recs) {
				if u.temp != "" {
					got = append(got, fmt.Sprintf("%s(%s,%d)", u.rec.ID, u.temp, u.n))
				} else {
					got = append(got, u.rec.ID)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("units %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}
