package sidecar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/intentfs/intentfs/internal/textsafe"
)

// maxEvolution bounds the evolution log kept per intent.
const maxEvolution = 200

// maxListedFiles bounds the files written into an intent's block, so a
// tar -x of a million files cannot grow intent_map.md (rewritten at each
// flush) without end; the ledger has them all.
const maxListedFiles = 2000

// IntentMap maintains intent_map.md: a section per intent listing the
// files it created or changed, and an evolution log of content changes.
// Sections intentfs manages sit between markers; everything outside them,
// and the human's own text, survives every update. Changes are collected in
// memory and written by Flush, so a `tar -x` costs one rewrite, not one per
// file.
type IntentMap struct {
	Path string

	// flushMu serializes Flush; mu guards the sections. Flush holds mu
	// only to copy them, so the file's read, render and write never keep
	// a file operation (which calls Touch) waiting.
	flushMu  sync.Mutex
	mu       sync.Mutex
	loaded   bool
	sections map[string]*mapSection
	order    []string
	dirty    bool
}

// mapSection is one intent's part of the map. Touch, Remove and Move are
// called for every file operation, so membership is a set: a tar -x of
// 10,000 files must not compare each new path with all earlier ones.
type mapSection struct {
	name string
	// files lists paths in the order they were touched; it may still
	// hold paths removed since, until it is compacted. live maps each
	// listed path to its entry in files.
	files     []string
	live      map[string]int
	evolution []string
}

func newSection() *mapSection { return &mapSection{live: map[string]int{}} }

// add lists path, reporting whether it was not listed yet.
func (s *mapSection) add(path string) bool {
	if _, ok := s.live[path]; ok {
		return false
	}
	s.live[path] = len(s.files)
	s.files = append(s.files, path)
	return true
}

// remove unlists path, reporting whether it was listed.
func (s *mapSection) remove(path string) bool {
	if _, ok := s.live[path]; !ok {
		return false
	}
	delete(s.live, path)
	s.compact()
	return true
}

// compact drops the entries of unlisted paths once they are most of
// files, so that files stays within twice the listed paths however many
// were removed or renamed over.
func (s *mapSection) compact() {
	if len(s.files) > 64 && len(s.files) > 2*len(s.live) {
		s.files = s.listed()
		for i, f := range s.files {
			s.live[f] = i
		}
	}
}

// isLive reports whether entry i of files is a listed path.
func (s *mapSection) isLive(i int) bool {
	j, ok := s.live[s.files[i]]
	return ok && j == i
}

// listed returns the listed paths in order.
func (s *mapSection) listed() []string { return s.firstListed(len(s.live)) }

// firstListed returns the first n listed paths in order.
func (s *mapSection) firstListed(n int) []string {
	out := make([]string, 0, min(n, len(s.live)))
	for i, f := range s.files {
		if len(out) == n {
			break
		}
		if s.isLive(i) {
			out = append(out, f)
		}
	}
	return out
}

func beginMarker(id string) string { return "<!-- intentfs:begin " + textsafe.Escape(id) + " -->" }
func endMarker(id string) string   { return "<!-- intentfs:end " + textsafe.Escape(id) + " -->" }

// load reads the managed sections already in the file.
func (m *IntentMap) load() error {
	if m.loaded {
		return nil
	}
	m.sections = map[string]*mapSection{}
	data, err := readSidecar(m.Path)
	if errors.Is(err, os.ErrNotExist) {
		m.loaded = true
		return nil
	}
	if err != nil {
		return err
	}
	var cur *mapSection
	var part string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "<!-- intentfs:begin "):
			id, err := textsafe.Unescape(strings.TrimSuffix(strings.TrimPrefix(line, "<!-- intentfs:begin "), " -->"))
			if err != nil {
				cur = nil
				continue
			}
			cur = newSection()
			m.sections[id] = cur
			m.order = append(m.order, id)
		case strings.HasPrefix(line, "<!-- intentfs:end "):
			cur = nil
		case cur == nil:
		case line == "### Files":
			part = "files"
		case line == "### Evolution Log":
			part = "evolution"
		case strings.HasPrefix(line, "- ") && part == "files":
			// Names are written escaped (see renderSection); one that does
			// not unescape was not written by intentfs and is dropped.
			if name, err := textsafe.Unescape(strings.TrimSuffix(strings.TrimPrefix(line, "- `"), "`")); err == nil {
				cur.add(name)
			}
		case strings.HasPrefix(line, "- ") && part == "evolution":
			cur.evolution = append(cur.evolution, strings.TrimPrefix(line, "- "))
		}
	}
	m.loaded = true
	return sc.Err()
}

func (m *IntentMap) section(id, name string) *mapSection {
	s, ok := m.sections[id]
	if !ok {
		s = newSection()
		m.sections[id] = s
		m.order = append(m.order, id)
	}
	if name != "" {
		s.name = name
	}
	return s
}

// Touch records that intent id created or changed path; evolved marks a
// content change of a file that existed before.
func (m *IntentMap) Touch(id, name, path string, evolved bool, when time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.load() != nil || id == "" {
		return
	}
	s := m.section(id, name)
	if s.add(path) {
		m.dirty = true
	}
	if evolved {
		line := fmt.Sprintf("_[EVOLUTION %s]_ `%s` — content changed", when.UTC().Format("2006-01-02"), textsafe.Escape(path))
		if !slices.Contains(s.evolution, line) {
			s.evolution = append(s.evolution, line)
			if len(s.evolution) > maxEvolution {
				s.evolution = s.evolution[len(s.evolution)-maxEvolution:]
			}
			m.dirty = true
		}
	}
}

// Move follows a rename in every section that lists from, or files below
// it. A moved path keeps its place in the list.
func (m *IntentMap) Move(from, to string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.load() != nil {
		return
	}
	below := from + "/"
	for _, s := range m.sections {
		for i, f := range s.files {
			if !s.isLive(i) {
				continue
			}
			var moved string
			switch {
			case f == from:
				moved = to
			case strings.HasPrefix(f, below):
				moved = to + strings.TrimPrefix(f, from)
			default:
				continue
			}
			m.movePath(s, i, moved)
		}
		s.compact()
	}
}

// MoveFile follows the rename of a file, which has nothing below it: a
// lookup per section instead of Move's walk of every listed path, which
// an editor's save (a rename over the file) would otherwise pay under the
// map's lock, and pay more the more files the session has touched.
func (m *IntentMap) MoveFile(from, to string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.load() != nil {
		return
	}
	for _, s := range m.sections {
		if i, ok := s.live[from]; ok {
			m.movePath(s, i, to)
			s.compact()
		}
	}
}

// movePath moves the listed entry i of s to the path moved.
func (m *IntentMap) movePath(s *mapSection, i int, moved string) {
	delete(s.live, s.files[i])
	m.dirty = true
	if _, ok := s.live[moved]; ok {
		return // already listed where it was first touched
	}
	s.live[moved] = i
	s.files[i] = moved
}

// Remove drops a deleted path from every section.
func (m *IntentMap) Remove(path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.load() != nil {
		return
	}
	for _, s := range m.sections {
		if s.remove(path) {
			m.dirty = true
		}
	}
}

// Files returns the files listed for intent id.
func (m *IntentMap) Files(id string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.load() != nil || m.sections[id] == nil {
		return nil
	}
	return m.sections[id].listed()
}

// Flush writes the file if anything changed.
func (m *IntentMap) Flush() error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	if !m.dirty {
		m.mu.Unlock()
		return nil
	}
	snap := m.snapshot()
	m.dirty = false
	m.mu.Unlock()

	err := func() error {
		data, err := readSidecar(m.Path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return writeAtomic(m.Path, []byte(snap.render(string(data))))
	}()
	if err != nil {
		m.mu.Lock()
		m.dirty = true // try again at the next flush
		m.mu.Unlock()
	}
	return err
}

// mapSnapshot is what Flush renders: the sections as they were when it
// began.
type mapSnapshot struct {
	order    []string
	sections map[string]sectionSnapshot
}

type sectionSnapshot struct {
	name             string
	files, evolution []string
	// listed counts the section's listed paths; files holds the first
	// maxListedFiles of them.
	listed int
}

// snapshot copies what render writes, and no more: the first
// maxListedFiles paths of each section and the count of the rest. Touch
// waits while it runs, so its cost must not grow with the files a
// session touched (a tar -x lists tens of thousands).
func (m *IntentMap) snapshot() mapSnapshot {
	snap := mapSnapshot{order: slices.Clone(m.order), sections: make(map[string]sectionSnapshot, len(m.sections))}
	for id, s := range m.sections {
		snap.sections[id] = sectionSnapshot{name: s.name, files: s.firstListed(maxListedFiles),
			evolution: slices.Clone(s.evolution), listed: len(s.live)}
	}
	return snap
}

func (snap mapSnapshot) renderSection(id string) string {
	s := snap.sections[id]
	var b strings.Builder
	b.WriteString(beginMarker(id) + "\n")
	b.WriteString("### Files\n\n")
	// A name is escaped (textsafe) so that one holding a newline cannot
	// end the block or start an entry, a heading or a marker of its own.
	for _, f := range s.files {
		fmt.Fprintf(&b, "- `%s`\n", textsafe.Escape(f))
	}
	if s.listed > len(s.files) {
		fmt.Fprintf(&b, "\n_… and %d more files: `intentfs log --intent %s`_\n", s.listed-len(s.files), textsafe.Escape(id))
	}
	if len(s.evolution) > 0 {
		b.WriteString("\n### Evolution Log\n\n")
		for _, e := range s.evolution {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	b.WriteString(endMarker(id) + "\n")
	return b.String()
}

// render replaces each managed block in doc and appends sections for new
// intents, leaving all other text alone.
func (snap mapSnapshot) render(doc string) string {
	if doc == "" {
		doc = "# Intent map\n\nWhich files each intent created or changed. intentfs keeps the parts between\nits markers up to date; write your own notes anywhere outside them.\n"
	}
	for _, id := range snap.order {
		block := snap.renderSection(id)
		begin, end := beginMarker(id), endMarker(id)
		i := strings.Index(doc, begin)
		j := strings.Index(doc, end)
		if i >= 0 && j > i {
			doc = doc[:i] + block + strings.TrimPrefix(doc[j+len(end):], "\n")
			continue
		}
		if !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		// A heading the human wrote for this intent gets the block at the
		// end of its section.
		if h := strings.Index(doc, "\n## "+id+":"); h >= 0 || strings.HasPrefix(doc, "## "+id+":") {
			h++
			end := len(doc)
			if next := strings.Index(doc[h:], "\n## "); next >= 0 {
				end = h + next + 1
			}
			sep := "\n"
			if strings.HasSuffix(doc[:end], "\n\n") {
				sep = ""
			}
			doc = doc[:end] + sep + block + doc[end:]
			continue
		}
		name := snap.sections[id].name
		if name == "" {
			name = id
		}
		doc += fmt.Sprintf("\n## %s: %s\n\n%s", textsafe.Escape(id), textsafe.Escape(name), block)
	}
	return doc
}
