package webui

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"path"
	"strings"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Mount is a mount the page shows.
type Mount struct {
	Mountpoint string
	Source     string
	Socket     string
}

// Backend is what the page reads and acts through. Actions go to the
// daemon's control socket, as the CLI's do, so the daemon's own checks
// of who may decide apply to the page too.
type Backend interface {
	// Mounts lists the mounts the page may show.
	Mounts() ([]Mount, error)
	// Call sends one control request.
	Call(ctx context.Context, m Mount, req control.Request) (*control.Response, error)
	// Watch follows the mount's events until ctx ends.
	Watch(ctx context.Context, m Mount, fn func(control.Event) error) error
	// IntentDiff returns what an intent changed, file by file.
	IntentDiff(m Mount, intent string) ([]history.FileDiff, error)
	// Blame attributes each line of a file to the record that wrote it.
	Blame(m Mount, rel string) ([]history.BlameLine, error)
	// Verify checks the ledger and the tree.
	Verify(m Mount) *ledger.Report
	// Intents lists the intents of the mount's policy.
	Intents(m Mount) ([]*policy.Intent, error)
}

// Local is the Backend of a ui run on the machine of its mounts: the
// mounts this user's registry lists (only one, if Only names it).
type Local struct {
	Registry mounts.Registry
	// Only is the mountpoint shown, "" for all.
	Only string
}

// Mounts lists the registry's live mounts.
func (l Local) Mounts() ([]Mount, error) {
	entries, err := l.Registry.List()
	if err != nil {
		return nil, fmt.Errorf("listing the mounts in %s: %w", l.Registry.Dir, err)
	}
	var out []Mount
	for _, e := range entries {
		if l.Only == "" || e.Mountpoint == l.Only {
			out = append(out, Mount{Mountpoint: e.Mountpoint, Source: e.Source, Socket: e.Socket})
		}
	}
	return out, nil
}

// Call sends req in the name of the user running the ui.
func (l Local) Call(ctx context.Context, m Mount, req control.Request) (*control.Response, error) {
	if u, err := user.Current(); err == nil {
		req.User = u.Username + " via intentfs ui"
	}
	return control.Call(ctx, m.Socket, req)
}

// Watch follows the mount's feed.
func (l Local) Watch(ctx context.Context, m Mount, fn func(control.Event) error) error {
	return control.Watch(ctx, m.Socket, control.Request{}, fn)
}

func (l Local) history(m Mount) *history.Source { return workspace.At(m.Source).History() }

// settle asks the mount's daemon to record what its writers have written
// before the page reads the ledger file (control.Backend.Settle): on the
// cached data path a write is recorded once its file's writes pause, and
// a diff, blame or verify opened right after an edit would miss it. Best
// effort, and bounded: a daemon that does not answer leaves the ledger as
// it is on disk.
func (l Local) settle(m Mount) {
	ctx, cancel := context.WithTimeout(context.Background(), control.SettleWait)
	defer cancel()
	_, _ = l.Call(ctx, m, control.Request{Op: "settle"})
}

// IntentDiff returns each file's change from its first recorded version
// under intent to its last.
func (l Local) IntentDiff(m Mount, intent string) ([]history.FileDiff, error) {
	l.settle(m)
	h := l.history(m)
	var recs []*ledger.Record
	if err := ledger.Query(h.Ledger, ledger.Filter{Intent: intent}, func(r *ledger.Record) error { recs = append(recs, r); return nil }); err != nil {
		return nil, fmt.Errorf("reading the ledger of %s: %w", m.Mountpoint, err)
	}
	return h.NetFileDiffs(recs)
}

// Blame reads the file through the source, never following a symlink.
func (l Local) Blame(m Mount, rel string) ([]history.BlameLine, error) {
	clean, err := workspacePath(rel)
	if err != nil {
		return nil, err
	}
	l.settle(m)
	return l.history(m).Blame(clean)
}

// Verify runs intentfs verify's checks of the local ledger.
func (l Local) Verify(m Mount) *ledger.Report {
	l.settle(m)
	layout := workspace.At(m.Source)
	ig, _, _ := policy.LoadIgnore(m.Source)
	return ledger.Verify(ledger.VerifyOptions{Ledger: layout.LedgerPath(), Source: m.Source,
		Exempt: func(rel string, isDir bool) bool { return ig.Match(rel, isDir) }, ListObjects: layout.Objects().List})
}

// Intents reads the mount's policy file.
func (l Local) Intents(m Mount) ([]*policy.Intent, error) {
	in, _, err := policy.LoadIntents(workspace.At(m.Source).PolicyPath())
	if err != nil {
		return nil, err
	}
	return in.List, nil
}

// workspacePath turns what the human typed into a workspace-relative
// path: no leading slash, no "..".
func workspacePath(p string) (string, error) {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	if p == "" {
		return "", errors.New("name a file of the workspace, relative to its root")
	}
	clean := path.Clean(p)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return "", fmt.Errorf("%q is not a path inside the workspace: give it relative to the workspace's root", p)
	}
	return clean, nil
}
