// Package agentapi is what agent-side integrations (the Claude Code and
// Codex hooks, the MCP server) use to talk to a mount. They run as the
// agent, which may be another user than the daemon and cannot reach the
// daemon's private control socket; so they use the mount's own .intentfs/
// files, exactly as an agent in a shell would, and every selection or
// lesson they make is attributed to the agent's process in the ledger.
package agentapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/intentfs/intentfs/control"
)

// ControlDirName is the in-mount control directory.
const ControlDirName = ".intentfs"

// maxControlRead bounds what is read from one control file.
const maxControlRead = 1 << 20

// Mount is one governed workspace, as an agent reaches it.
type Mount interface {
	// Root is the mountpoint.
	Root() string
	// Intents lists the intents, one line each.
	Intents() (string, error)
	// Active returns the active intent id, "" for none.
	Active() (string, error)
	// Select makes id the active intent of the mount ("" deselects).
	Select(id string) error
	// Context returns the context block of the active intent.
	Context() (string, error)
	// Status returns the mount's status, recent denials included.
	Status() (*control.Status, error)
	// DryRun asks, as a dry run, whether op on the workspace-relative path
	// would be allowed now.
	DryRun(rel, op string) (*control.DryRunResult, error)
	// Lesson records a lesson under the active intent.
	Lesson(text string) error
	// Guide returns the agent guide.
	Guide() (string, error)
	// RequestScope asks the human to add paths (globs) to the active
	// intent's owned_scope, saying why.
	RequestScope(paths []string, why string) error
	// Pending lists what waits for a human and the recent decisions.
	Pending() (string, error)
}

// FileMount reaches a mount through its .intentfs/ files.
type FileMount struct{ Mountpoint string }

var _ Mount = FileMount{}

// Root is the mountpoint.
func (m FileMount) Root() string { return m.Mountpoint }

func (m FileMount) ctl(name string) string { return filepath.Join(m.Mountpoint, ControlDirName, name) }

func (m FileMount) read(name string) (string, error) {
	f, err := os.OpenFile(m.ctl(name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", m.ctl(name), err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxControlRead))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", m.ctl(name), err)
	}
	return string(b), nil
}

// write sends one command in one write(2), as the control files expect.
func (m FileMount) write(name, data string) error {
	f, err := os.OpenFile(m.ctl(name), os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", m.ctl(name), err)
	}
	_, werr := f.Write([]byte(data))
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// Intents lists the intents.
func (m FileMount) Intents() (string, error) { return m.read("intents") }

// Active returns the active intent id.
func (m FileMount) Active() (string, error) {
	s, err := m.read("active")
	if s = strings.TrimSpace(s); s == "none" {
		s = ""
	}
	return s, err
}

// Select writes id to .intentfs/active. A refusal is explained with the
// reason the daemon recorded for it.
func (m FileMount) Select(id string) error {
	if id == "" {
		id = "none"
	}
	err := m.write("active", id+"\n")
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EINVAL) {
		if why := m.lastControlDenial("active"); why != "" {
			return errors.New(why)
		}
	}
	return fmt.Errorf("selecting %s: %w", id, err)
}

// lastControlDenial returns the reason of the newest refused write to a
// control file, which the daemon records with the reason.
func (m FileMount) lastControlDenial(file string) string {
	st, err := m.Status()
	if err != nil {
		return ""
	}
	for i := len(st.RecentDenials) - 1; i >= 0; i-- {
		if d := st.RecentDenials[i]; d.Path == ControlDirName+"/"+file {
			return d.Reason
		}
	}
	return ""
}

// Context returns the context block of the active intent.
func (m FileMount) Context() (string, error) { return m.read("context") }

// Status returns the mount's status.
func (m FileMount) Status() (*control.Status, error) {
	s, err := m.read("status")
	if err != nil {
		return nil, err
	}
	var st control.Status
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", m.ctl("status"), err)
	}
	return &st, nil
}

// DryRun asks .intentfs/check: the question and the answer travel on one
// read-write handle.
func (m FileMount) DryRun(rel, op string) (*control.DryRunResult, error) {
	q := rel
	if op != "" {
		// The check file reads "OP PATH" only for operations it knows;
		// anything else would be taken as part of the path.
		if !slices.Contains(control.DryRunOps(), op) {
			return nil, fmt.Errorf("unknown operation %q: one of %s", op, strings.Join(control.DryRunOps(), ", "))
		}
		q = op + " " + rel
	}
	f, err := os.OpenFile(m.ctl("check"), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", m.ctl("check"), err)
	}
	defer f.Close()
	if _, err := f.Write([]byte(q)); err != nil {
		if errors.Is(err, syscall.EINVAL) {
			if why := m.lastControlDenial("check"); why != "" {
				return nil, errors.New(why)
			}
		}
		return nil, fmt.Errorf("asking %s about %q: %w", m.ctl("check"), rel, err)
	}
	var res control.DryRunResult
	if err := json.NewDecoder(io.NewSectionReader(f, 0, maxControlRead)).Decode(&res); err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", m.ctl("check"), err)
	}
	return &res, nil
}

// Lesson writes text to .intentfs/lesson.
func (m FileMount) Lesson(text string) error {
	err := m.write("lesson", text)
	if err != nil && errors.Is(err, syscall.EINVAL) {
		if why := m.lastControlDenial("lesson"); why != "" {
			return errors.New(why)
		}
	}
	return err
}

// Guide returns .intentfs/README.md.
func (m FileMount) Guide() (string, error) { return m.read("README.md") }

// RequestScope writes a scope request to .intentfs/request.
func (m FileMount) RequestScope(paths []string, why string) error {
	err := m.write("request", "paths: "+strings.Join(paths, " ")+"\nwhy: "+why+"\n")
	if err != nil && errors.Is(err, syscall.EINVAL) {
		if reason := m.lastControlDenial("request"); reason != "" {
			return errors.New(reason)
		}
	}
	if errors.Is(err, syscall.EBUSY) {
		return errors.New("too many of your scope requests wait already: wait for a decision (see .intentfs/pending)")
	}
	return err
}

// Pending reads .intentfs/pending.
func (m FileMount) Pending() (string, error) { return m.read("pending") }
