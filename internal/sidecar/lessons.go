package sidecar

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/intentfs/intentfs/internal/textsafe"
)

// LessonsHeading is the section lessons are appended under.
const LessonsHeading = "## Lessons Learned"

// maxLessonBytes bounds one lesson's text.
const maxLessonBytes = 4096

// MaxLessonsFileBytes bounds the whole lessons file: every lesson rewrites
// it, and agents read it at every start, so it must not grow without end.
// A lesson that would take it past the bound is refused; a human makes
// room by editing the file.
const MaxLessonsFileBytes = 256 << 10

// Lessons appends dated entries to the "Lessons Learned" section of a
// markdown file (CLAUDE.md, AGENT.md, ...), creating the file or the
// section if missing and keeping everything else as it is.
type Lessons struct {
	Path string
	// Added, if set, is called after a lesson was written (the daemon
	// republishes the workspace's agent files).
	Added func()
	mu    sync.Mutex
}

// Add records text as a lesson of intent. It returns false, and writes
// nothing, if the same lesson is already in the file.
func (l *Lessons) Add(intent, text string, when time.Time) (bool, error) {
	// One line of text, escaped: a lesson cannot start a heading or a
	// section of its own, or carry a terminal escape into the file.
	text = textsafe.Escape(strings.Join(strings.Fields(strings.ToValidUTF8(text, "?")), " "))
	if text == "" {
		return false, errors.New("a lesson needs some text")
	}
	if len(text) > maxLessonBytes {
		return false, fmt.Errorf("a lesson is at most %d bytes", maxLessonBytes)
	}
	if intent == "" {
		intent = "no intent"
	}
	body := fmt.Sprintf("[%s] %s", intent, text)
	entry := fmt.Sprintf("- %s %s\n", when.UTC().Format("2006-01-02"), body)
	added, err := l.add(body, entry)
	// Outside the lock: Added reads the lessons back.
	if added && l.Added != nil {
		l.Added()
	}
	return added, err
}

func (l *Lessons) add(body, entry string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data, err := readSidecar(l.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("reading %s: %w", l.Path, err)
	}
	doc := string(data)
	// The same lesson of the same intent, on any date, is a duplicate.
	if strings.Contains(doc, " "+body+"\n") {
		return false, nil
	}
	out := insertLesson(doc, entry)
	if len(out) > MaxLessonsFileBytes {
		return false, fmt.Errorf("%s is full (%d bytes; lessons may take it to %d): edit it to make room", l.Path, len(doc), MaxLessonsFileBytes)
	}
	return true, writeAtomic(l.Path, []byte(out))
}

// insertLesson puts entry at the end of the Lessons Learned section.
func insertLesson(doc, entry string) string {
	if doc == "" {
		return "# Shared knowledge for agents working in this repository\n\n" + LessonsHeading + "\n\n" + entry
	}
	lines := strings.SplitAfter(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimRight(l, "\r\n") == LessonsHeading {
			start = i
			break
		}
	}
	if start < 0 {
		if !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		return doc + "\n" + LessonsHeading + "\n\n" + entry
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") || strings.HasPrefix(lines[i], "# ") {
			end = i
			break
		}
	}
	// After the section's last non-blank line.
	at := end
	for at > start+1 && strings.TrimSpace(lines[at-1]) == "" {
		at--
	}
	if at > 0 && !strings.HasSuffix(lines[at-1], "\n") {
		lines[at-1] += "\n"
	}
	prefix := ""
	if at == start+1 {
		prefix = "\n"
	}
	out := append([]string{}, lines[:at]...)
	out = append(out, prefix+entry)
	if at < len(lines) && at == end {
		out = append(out, "\n")
	}
	out = append(out, lines[at:]...)
	return strings.Join(out, "")
}

// Entries returns the lessons in the file, oldest first: the "- " lines
// of its Lessons Learned section. A missing file has none.
func (l *Lessons) Entries() ([]string, error) {
	l.mu.Lock()
	data, err := readSidecar(l.Path)
	l.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", l.Path, err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case line == LessonsHeading:
			in = true
		case strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "## "):
			in = false
		case in && strings.HasPrefix(line, "- "):
			out = append(out, strings.TrimPrefix(line, "- "))
		}
	}
	return out, nil
}
