package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// A renamed file and a renamed directory both keep the intent map's
// listing right: the file's by its own entry, the directory's by what is
// listed below it.
func TestIntentMapFollowsFileAndDirectoryRenames(t *testing.T) {
	d := openDaemon(t, testPolicy)
	change := func(ev ledger.Event, path, from, post string) {
		d.gov.mapChange(ledger.Change{Event: ev, Path: path, FromPath: from, PostHash: post, Intent: "INT-001",
			Validation: string(policy.ValidationPass), Time: time.Now()})
	}
	const h = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	change(ledger.EventCreate, "src/d/x.go", "", h)
	change(ledger.EventCreate, "src/f.go", "", h)
	change(ledger.EventCreate, "src/f.go.tmp", "", h)
	change(ledger.EventRename, "src/f.go", "src/f.go.tmp", h) // an editor's save
	change(ledger.EventRename, "src/g.go", "src/f.go", h)
	change(ledger.EventRename, "src/e", "src/d", "") // a directory has no content hash
	if got, want := d.imap.Files("INT-001"), []string{"src/e/x.go", "src/g.go", "src/e"}; !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
}
