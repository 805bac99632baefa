package sidecar

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// maxEvolution bounds the evolution log kept per intent.
const maxEvolution = 200

// IntentMap maintains intent_map.md: a section per intent listing the
// files it created or changed, and an evolution log of content changes.
// Sections intentfs manages sit between markers; everything outside them,
// and the human's own text, survives every update. Changes are collected in
// memory and written by Flush, so a `tar -x` costs one rewrite, not one per
// file.
type IntentMap struct {
	Path string

	mu       sync.Mutex
	loaded   bool
	sections map[string]*mapSection
	order    []string
	dirty    bool
}

type mapSection struct {
	name      string
	files     []string
	evolution []string
}

func beginMarker(id string) string { return "<!-- intentfs:begin " + id + " -->" }
func endMarker(id string) string   { return "<!-- intentfs:end " + id + " -->" }

// load reads the managed sections already in the file.
func (m *IntentMap) load() error {
	if m.loaded {
		return nil
	}
	m.sections = map[string]*mapSection{}
	f, err := os.Open(m.Path)
	if errors.Is(err, os.ErrNotExist) {
		m.loaded = true
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var cur *mapSection
	var part string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "<!-- intentfs:begin "):
			id := strings.TrimSuffix(strings.TrimPrefix(line, "<!-- intentfs:begin "), " -->")
			cur = &mapSection{}
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
			cur.files = append(cur.files, strings.Trim(strings.TrimPrefix(line, "- "), "`"))
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
		s = &mapSection{}
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
	if !slices.Contains(s.files, path) {
		s.files = append(s.files, path)
		m.dirty = true
	}
	if evolved {
		line := fmt.Sprintf("_[EVOLUTION %s]_ `%s` — content changed", when.UTC().Format("2006-01-02"), path)
		if !slices.Contains(s.evolution, line) {
			s.evolution = append(s.evolution, line)
			if len(s.evolution) > maxEvolution {
				s.evolution = s.evolution[len(s.evolution)-maxEvolution:]
			}
			m.dirty = true
		}
	}
}

// Move follows a rename in every section that lists from.
func (m *IntentMap) Move(from, to string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.load() != nil {
		return
	}
	for _, s := range m.sections {
		for i, f := range s.files {
			switch {
			case f == from:
				s.files[i] = to
				m.dirty = true
			case strings.HasPrefix(f, from+"/"):
				s.files[i] = to + strings.TrimPrefix(f, from)
				m.dirty = true
			}
		}
	}
}

// Remove drops a deleted path from every section.
func (m *IntentMap) Remove(path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.load() != nil {
		return
	}
	for _, s := range m.sections {
		if i := slices.Index(s.files, path); i >= 0 {
			s.files = slices.Delete(s.files, i, i+1)
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
	return slices.Clone(m.sections[id].files)
}

// Flush writes the file if anything changed.
func (m *IntentMap) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty {
		return nil
	}
	data, err := os.ReadFile(m.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out := m.render(string(data))
	if err := writeAtomic(m.Path, []byte(out)); err != nil {
		return err
	}
	m.dirty = false
	return nil
}

func (m *IntentMap) renderSection(id string) string {
	s := m.sections[id]
	var b strings.Builder
	b.WriteString(beginMarker(id) + "\n")
	b.WriteString("### Files\n\n")
	for _, f := range s.files {
		fmt.Fprintf(&b, "- `%s`\n", f)
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
func (m *IntentMap) render(doc string) string {
	if doc == "" {
		doc = "# Intent map\n\nWhich files each intent created or changed. intentfs keeps the parts between\nits markers up to date; write your own notes anywhere outside them.\n"
	}
	for _, id := range m.order {
		block := m.renderSection(id)
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
		name := m.sections[id].name
		if name == "" {
			name = id
		}
		doc += fmt.Sprintf("\n## %s: %s\n\n%s", id, name, block)
	}
	return doc
}
