package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// AgentFilesNone turns the workspace agent files off.
const AgentFilesNone = "none"

// setupAgentFiles prepares the section intentfs keeps in the workspace's
// CLAUDE.md / AGENTS.md, from cfg.AgentFiles: "auto" for the default
// files, "" or "none" for none, else a comma-separated list of names.
func (d *Daemon) setupAgentFiles() error {
	spec := strings.TrimSpace(d.cfg.AgentFiles)
	if spec == "" || spec == AgentFilesNone {
		return nil
	}
	var names []string
	if spec != "auto" {
		for _, n := range strings.Split(spec, ",") {
			n = strings.TrimSpace(n)
			if err := sidecar.ValidateAgentFileName(n); err != nil {
				return err
			}
			names = append(names, n)
		}
	}
	d.agentFiles = &sidecar.AgentFiles{Source: d.cfg.Source, Names: names, Guide: control.AgentGuide, Lessons: d.lessons,
		Wrote: d.recordAgentFile}
	d.lessons.Added = d.publishAgentFiles
	return nil
}

// publishAgentFiles updates the section; a failure is logged, never
// fatal: it is guidance for agents, not governance.
func (d *Daemon) publishAgentFiles() {
	if d.agentFiles == nil {
		return
	}
	if err := d.agentFiles.Publish(); err != nil {
		d.log.Warn("updating the agents' instruction files failed", "err", err)
	}
}

// recordAgentFile records intentfs's own write of an agent file: it was
// made in the source by the daemon, not by an agent through the mount,
// so it is not governed, but the ledger still says what changed it.
func (d *Daemon) recordAgentFile(name string, pre, post []byte) {
	c := ledger.Change{Event: ledger.EventWrite, Path: name, PreHash: hashOf(pre), PostHash: hashOf(post),
		Validation: string(policy.ValidationExempt), Code: string(policy.CodeExempt),
		Reason:  "intentfs updated its section of " + name + " (agent guide and lessons learned)",
		Process: &ledger.Process{Pid: uint32(os.Getpid()), Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid()), Comm: "intentfs"}}
	if pre == nil {
		c.Event = ledger.EventCreate
		d.excludeFromGit(name)
	} else if err := d.objectStore().KeepBytes(pre, c.PreHash); err != nil {
		// verify and revert need the version this write replaced.
		d.log.Warn("keeping the replaced version of an agent file failed", "path", name, "err", err)
	} else {
		c.PreImage = "stored"
	}
	c.Class = ledger.ClassDocumentation
	d.gov.Record(c)
}

func hashOf(b []byte) string {
	if b == nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// excludeFromGit adds name, an agent file the daemon created, to the
// repository's local exclude file (.git/info/exclude, never committed):
// otherwise the agent's `git add -A` commits intentfs's guide, and a
// later rebase onto an upstream without it must remove a file outside the
// agent's scope, and stops. A tracked file is not affected by excludes,
// and a human who wants it committed adds it with git add -f.
//
// A linked worktree has no exclude file of its own: git reads the common
// directory's, for every work tree of the repository.
func (d *Daemon) excludeFromGit(name string) {
	root, rel := d.cfg.Source, ".git/info/exclude"
	if d.commonDir != "" {
		root, rel = d.commonDir, "info/exclude"
	} else if st, err := os.Lstat(filepath.Join(d.cfg.Source, ".git")); err != nil || !st.IsDir() {
		return // not a repository's top
	}
	cur, err := safeio.ReadFile(root, rel, 1<<20)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn("reading the repository's exclude file failed", "err", err)
		return
	}
	line := "/" + name
	for _, l := range strings.Split(string(cur), "\n") {
		if strings.TrimSpace(l) == line {
			return
		}
	}
	if len(cur) > 0 && !strings.HasSuffix(string(cur), "\n") {
		cur = append(cur, '\n')
	}
	cur = append(cur, "# intentfs's agent guide, which the mount writes: not committed (git add -f to commit it)\n"+line+"\n"...)
	if err := safeio.ReplaceBelow(filepath.Join(root, rel), cur, 0o644); err != nil {
		d.log.Warn("adding the agent file to the repository's exclude file failed", "name", name, "err", err)
	}
}
