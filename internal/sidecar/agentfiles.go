package sidecar

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/intentfs/intentfs/internal/safeio"
)

// The markers of the section intentfs owns in an agent instructions file.
// Everything outside them belongs to the humans who wrote the file.
const (
	SectionBegin = "<!-- intentfs:lessons:begin -->"
	SectionEnd   = "<!-- intentfs:lessons:end -->"
)

const (
	// maxSectionBytes bounds intentfs's section: it is read into every
	// agent's context.
	maxSectionBytes = 12 << 10
	// maxAgentFileBytes bounds an agent file intentfs reads to update.
	maxAgentFileBytes = 1 << 20
)

// DefaultAgentFiles are the instruction files agents read at the
// workspace root: CLAUDE.md (Claude Code) and AGENTS.md (Codex and
// others).
func DefaultAgentFiles() []string { return []string{"CLAUDE.md", "AGENTS.md"} }

// AgentFiles keeps a marked section -- the agent guide and the most recent
// lessons -- in the instruction files at the root of the source, where
// agents read their instructions. It writes the source directly, never
// through the mount, atomically, symlink-free, keeping the file's owner
// and mode, and never touching text outside its markers.
type AgentFiles struct {
	Source string
	// Names are the files to keep the section in; nil means the default
	// files that exist, or CLAUDE.md when none does.
	Names []string
	// Guide is the text put before the lessons.
	Guide string
	// Lessons is where the lessons are read from.
	Lessons *Lessons
	// Wrote, if set, is told of each file written (pre is nil for a new
	// file), for the ledger.
	Wrote func(name string, pre, post []byte)
	mu    sync.Mutex
}

// ValidateAgentFileName refuses names that are not plain file names at
// the workspace root.
func ValidateAgentFileName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("agent file %q must be a file name at the workspace root (e.g. CLAUDE.md)", name)
	}
	return nil
}

// Publish brings the section of every agent file up to date. Each file
// is handled on its own; the errors of all are returned together.
func (a *AgentFiles) Publish() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var entries []string
	if a.Lessons != nil {
		var err error
		if entries, err = a.Lessons.Entries(); err != nil {
			return err
		}
	}
	section := RenderSection(a.Guide, entries, a.Lessons)
	var errs []error
	for _, name := range a.targets() {
		if err := a.update(name, section); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *AgentFiles) targets() []string {
	if a.Names != nil {
		return a.Names
	}
	var out []string
	for _, n := range DefaultAgentFiles() {
		if _, err := os.Lstat(filepath.Join(a.Source, n)); err == nil {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []string{"CLAUDE.md"}
	}
	return out
}

// escapeLesson keeps lesson text from closing or opening a comment, so
// no lesson can forge or end intentfs's section.
func escapeLesson(s string) string {
	s = strings.ReplaceAll(s, "<!--", "&lt;!--")
	return strings.ReplaceAll(s, "-->", "--&gt;")
}

// RenderSection builds the marked section: the guide, then as many of the
// newest lessons as fit, oldest first.
func RenderSection(guide string, entries []string, l *Lessons) string {
	var b strings.Builder
	b.WriteString(SectionBegin + "\n")
	b.WriteString("<!-- Written by intentfs: edits between these markers are replaced. Text outside them is never touched. -->\n")
	b.WriteString(strings.TrimSpace(escapeLesson(guide)) + "\n\n")
	b.WriteString("## Lessons learned in this workspace\n\n")
	budget := maxSectionBytes - b.Len() - 512
	var kept []string
	for i := len(entries) - 1; i >= 0; i-- {
		line := "- " + escapeLesson(entries[i]) + "\n"
		if len(line) > budget {
			break
		}
		budget -= len(line)
		kept = append(kept, line)
	}
	if len(kept) == 0 {
		b.WriteString("None yet. Record one with `echo \"what you learned\" > .intentfs/lesson`.\n")
	}
	for i := len(kept) - 1; i >= 0; i-- {
		b.WriteString(kept[i])
	}
	if omitted := len(entries) - len(kept); omitted > 0 && l != nil {
		fmt.Fprintf(&b, "\n(%d older lessons are in %s.)\n", omitted, filepath.Base(filepath.Dir(l.Path))+"/"+filepath.Base(l.Path))
	}
	b.WriteString(SectionEnd + "\n")
	return b.String()
}

// SpliceSection puts section into doc: in place of the existing marked
// section, or appended when there is none. A file whose markers are not
// exactly one begin followed by one end is left alone.
func SpliceSection(doc, section string) (string, error) {
	begins, ends := strings.Count(doc, SectionBegin), strings.Count(doc, SectionEnd)
	switch {
	case begins == 0 && ends == 0:
		if doc == "" {
			return section, nil
		}
		if !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		return doc + "\n" + section, nil
	case begins == 1 && ends == 1:
		i, j := strings.Index(doc, SectionBegin), strings.Index(doc, SectionEnd)
		if j < i {
			break
		}
		rest := doc[j+len(SectionEnd):]
		rest = strings.TrimPrefix(rest, "\n")
		return doc[:i] + section + rest, nil
	}
	return "", fmt.Errorf("it has %d %q and %d %q markers: leave exactly one pair, begin before end (or none), and intentfs will update it; nothing was written",
		begins, SectionBegin, ends, SectionEnd)
}

// update rewrites one file's section if it changed.
func (a *AgentFiles) update(name, section string) error {
	path := filepath.Join(a.Source, name)
	var st syscall.Stat_t
	statErr := syscall.Lstat(path, &st)
	old, err := safeio.ReadFile(a.Source, name, maxAgentFileBytes)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("updating %s: %w (it must be a regular file, not a symlink)", path, err)
	}
	doc, err := SpliceSection(string(old), section)
	if err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	if exists && doc == string(old) {
		return nil
	}
	mode, uid, gid := os.FileMode(0o644), -1, -1
	if exists && statErr == nil {
		mode, uid, gid = os.FileMode(st.Mode&0o777), int(st.Uid), int(st.Gid)
	} else {
		// A new file belongs to whoever owns the workspace, and its
		// group may write it where the group may write the workspace:
		// a checkout shared with the agent through a group, so that
		// the file intentfs made is not one the agent may not edit.
		var dst syscall.Stat_t
		if err := syscall.Stat(a.Source, &dst); err == nil {
			uid, gid = int(dst.Uid), int(dst.Gid)
			if dst.Mode&0o020 != 0 {
				mode |= 0o020
			}
		}
	}
	tmp, err := safeio.WriteTemp(path, []byte(doc), mode)
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 && uid >= 0 {
		if err := os.Lchown(tmp, uid, gid); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("updating %s: %w", path, err)
		}
	}
	// A human who saved the file since it was read wins: try again later.
	var now syscall.Stat_t
	if nowErr := syscall.Lstat(path, &now); (nowErr == nil) != exists || (exists && (now.Ino != st.Ino || now.Mtim != st.Mtim || now.Size != st.Size)) {
		os.Remove(tmp)
		return fmt.Errorf("updating %s: it changed while intentfs was updating it; the next lesson will update it", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("updating %s: %w", path, err)
	}
	if a.Wrote != nil {
		var pre []byte
		if exists {
			pre = old
		}
		a.Wrote(name, pre, []byte(doc))
	}
	return nil
}
