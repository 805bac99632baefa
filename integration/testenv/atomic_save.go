package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/ledger"
)

// DirNames lists the names of the source directory dir.
func (e *Env) DirNames(dir string) []string {
	e.T.Helper()
	ents, err := os.ReadDir(filepath.Join(e.Src, dir))
	if err != nil {
		e.T.Fatal(err)
	}
	var out []string
	for _, en := range ents {
		out = append(out, en.Name())
	}
	return out
}

// HasContentRecord reports whether a record of a change to rel leaves it
// with content of hash post; if not, it logs the records of rel.
func (e *Env) HasContentRecord(rel, post string) bool {
	var of []string
	for _, r := range e.Records() {
		if r.Path() != rel {
			continue
		}
		g := r.Gov()
		if g.Event != ledger.EventDenied && HashOf(g.PostHash) == post {
			return true
		}
		of = append(of, fmt.Sprintf("%s from=%s op=%s pre=%s post=%s code=%s %s", g.Event, g.FromPath, g.Op, HashOf(g.PreHash), HashOf(g.PostHash), g.Code, g.Reason))
	}
	e.T.Logf("no record leaves %s at %s; its records:\n%s", rel, post, strings.Join(of, "\n"))
	return false
}

// HashOf is the hash a record carries, "" where it carries none.
func HashOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// StrayWait bounds the wait for a provisional file's removal: its idle
// window, the sweeper's tick, and a loaded machine.
const StrayWait = fsnode.DefaultProvisionalIdle + 15*time.Second

// WaitGone polls until the source has no rel, and fails after strayWait.
func (e *Env) WaitGone(rel string) {
	e.T.Helper()
	deadline := time.Now().Add(StrayWait)
	for {
		if _, ok := e.SrcContent(rel); !ok {
			return
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("%s is still in the source %s after it was closed", rel, StrayWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitRemovalRecord waits for the record of the removal of provisional
// file rel, which held content.
func (e *Env) WaitRemovalRecord(rel, content string) {
	e.T.Helper()
	r := e.WaitRecord("the removal of "+rel, func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventDenied && r.Gov().Op == "discard" && r.Path() == rel && r.Gov().Code == fsnode.CodeProvisionalRemoved
	})
	if got := HashOf(r.Gov().PreHash); got != ShaOf([]byte(content)) {
		e.T.Errorf("the removal of %s records hash %s, want that of %q", rel, got, content)
	}
	if r.Gov().Session == nil && !strings.Contains(r.Gov().Reason, "temporary") {
		e.T.Errorf("the removal record does not say what it removed: %q", r.Gov().Reason)
	}
}
