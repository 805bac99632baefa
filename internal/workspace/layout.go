// Package workspace is a façade above the features a source holds: it
// says where the policy, the ledger, the object store, the lock, the
// intent map and the lessons file live, and opens a source for writing
// (its lock, ledger writer and workflow), wired the same way for a mount
// and for a CLI command that changes an unmounted source, so the two
// cannot drift apart. It imports the feature packages (history, sidecar,
// workflow, objects); none of them imports it.
//
// The file names the ledger and the object store own (ledger.FileName,
// ledger.LockFile, objects.Dir) stay declared in those packages, which
// need them and cannot import this one; everything above them asks here.
package workspace

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// DefaultLessonsFile is the file in .orchestration/ that lessons are
// appended to unless a mount or command names another.
const DefaultLessonsFile = "CLAUDE.md"

// IntentMapFile is the file in .orchestration/ that maps each intent to the
// files it changed.
const IntentMapFile = "intent_map.md"

// Layout is where a source keeps its orchestration files. The zero value
// is not useful; use At.
type Layout struct {
	source      string
	lessonsFile string
}

// At is the layout of source (an absolute, canonical directory), with the
// default lessons file.
func At(source string) Layout {
	return Layout{source: source, lessonsFile: DefaultLessonsFile}
}

// WithLessonsFile is l with lessons going to name, a file in
// .orchestration/; "" keeps the default. A name with a slash is refused:
// lessons stay beside the policy, not anywhere the flag points.
func (l Layout) WithLessonsFile(name string) (Layout, error) {
	switch {
	case name == "":
		name = DefaultLessonsFile
	case strings.ContainsRune(name, '/'), name == ".", name == "..":
		return Layout{}, fmt.Errorf("the lessons file %q must be a file name in %s/ (e.g. AGENT.md)", name, policy.OrchestrationDir)
	}
	l.lessonsFile = name
	return l, nil
}

// Source is the source directory.
func (l Layout) Source() string { return l.source }

// Dir is the .orchestration/ directory.
func (l Layout) Dir() string { return filepath.Join(l.source, policy.OrchestrationDir) }

// PolicyPath is the intents file, active_intents.yaml.
func (l Layout) PolicyPath() string { return filepath.Join(l.source, policy.IntentsFile) }

// LedgerPath is the ledger file, agent_trace.jsonl.
func (l Layout) LedgerPath() string { return filepath.Join(l.source, ledger.FileName) }

// LockPath is the file whose flock makes one process the ledger's writer.
func (l Layout) LockPath() string { return filepath.Join(l.source, ledger.LockFile) }

// ObjectsDir is the object store's directory.
func (l Layout) ObjectsDir() string { return filepath.Join(l.source, objects.Dir) }

// IntentMapPath is intent_map.md.
func (l Layout) IntentMapPath() string { return filepath.Join(l.Dir(), IntentMapFile) }

// LessonsFile is the name of the lessons file in .orchestration/.
func (l Layout) LessonsFile() string { return l.lessonsFile }

// LessonsPath is the lessons file.
func (l Layout) LessonsPath() string { return filepath.Join(l.Dir(), l.lessonsFile) }

// Objects opens the source's object store.
func (l Layout) Objects() *objects.Store { return objects.New(l.source) }

// IntentMap opens intent_map.md. Its entries are cached in the value, so
// a process that updates the map keeps one.
func (l Layout) IntentMap() *sidecar.IntentMap { return &sidecar.IntentMap{Path: l.IntentMapPath()} }

// Lessons opens the lessons file. Appends are serialised per value, so a
// process keeps one.
func (l Layout) Lessons() *sidecar.Lessons { return &sidecar.Lessons{Path: l.LessonsPath()} }

// History is the source's ledger and object store, for diff, blame and
// revert.
func (l Layout) History() *history.Source {
	return &history.Source{Dir: l.source, Ledger: l.LedgerPath(), Store: l.Objects()}
}
