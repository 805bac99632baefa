// Package policyedit rewrites the policy file for the intent lifecycle:
// comment- and layout-preserving edits of one intent, appending a new
// intent, the locked atomic write-back, and the scaffold that `intentfs
// init` writes. The filesystem never imports it: it only decides, through
// package policy.
package policyedit

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/intentfs/intentfs/policy"
)

// IntentChange is an edit to one intent of a policy file.
type IntentChange struct {
	ID          string
	Status      policy.Status // "" leaves the status alone
	AddScope    []string
	RemoveScope []string
	// Now is the updated_at to write; zero means time.Now().
	Now time.Time
}

// NewIntent is an intent to append to a policy file.
type NewIntent struct {
	ID                 string
	Name               string
	Scope              []string
	Constraints        []string
	AcceptanceCriteria []string
	Parent             string
	Now                time.Time
}

// ApplyChange edits the intent c.ID in the policy text data. Only the
// tokens that change are rewritten: comments, key order, quoting,
// indentation and the other intents stay byte for byte. updated_at is set;
// version is bumped when owned_scope changes. The result is validated.
func ApplyChange(file string, data []byte, c IntentChange) ([]byte, error) {
	doc, err := parseDoc(file, data)
	if err != nil {
		return nil, err
	}
	item, err := doc.findIntent(c.ID)
	if err != nil {
		return nil, err
	}
	var sp splicer
	if c.Status != "" {
		v := mapValue(item, "status")
		if v == nil {
			return nil, fmt.Errorf("%s: intent %s has no status to change", file, c.ID)
		}
		if err := sp.scalar(doc, v, string(c.Status)); err != nil {
			return nil, err
		}
	}
	scopeChanged := false
	if len(c.AddScope)+len(c.RemoveScope) > 0 {
		seq := mapValue(item, "owned_scope")
		if seq == nil || seq.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%s: intent %s has no owned_scope list", file, c.ID)
		}
		if scopeChanged, err = sp.editSequence(doc, seq, c.AddScope, c.RemoveScope); err != nil {
			return nil, err
		}
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	if err := sp.setOrAdd(doc, item, "updated_at", now.UTC().Format(time.RFC3339)); err != nil {
		return nil, err
	}
	if scopeChanged {
		version := 1
		if v := mapValue(item, "version"); v != nil {
			version, _ = strconv.Atoi(v.Value)
		}
		if err := sp.setOrAdd(doc, item, "version", strconv.Itoa(version+1)); err != nil {
			return nil, err
		}
	}
	out := sp.apply(data)
	if _, _, err := policy.ParseIntents(file, out); err != nil {
		return nil, fmt.Errorf("the edit would make the policy invalid: %w", err)
	}
	return out, nil
}

// AppendIntent adds an intent at the end of the active_intents list, in
// the list's own indentation.
func AppendIntent(file string, data []byte, n NewIntent) ([]byte, error) {
	if !policy.ValidID(n.ID) {
		return nil, fmt.Errorf("id %q does not match ^[A-Z]+-\\d{3,}$ (write it like INT-001)", n.ID)
	}
	doc, err := parseDoc(file, data)
	if err != nil {
		return nil, err
	}
	if _, err := doc.findIntent(n.ID); err == nil {
		return nil, fmt.Errorf("%s: intent %s already exists", file, n.ID)
	}
	now := n.Now
	if now.IsZero() {
		now = time.Now()
	}
	ts := now.UTC().Format(time.RFC3339)
	block := func(indent string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s- id: %s\n", indent, n.ID)
		in := indent + "  "
		fmt.Fprintf(&b, "%sname: %s\n", in, quote(n.Name))
		fmt.Fprintf(&b, "%sstatus: PENDING\n%sversion: 1\n", in, in)
		writeList(&b, in, "owned_scope", n.Scope)
		writeList(&b, in, "constraints", n.Constraints)
		writeList(&b, in, "acceptance_criteria", n.AcceptanceCriteria)
		if n.Parent != "" {
			fmt.Fprintf(&b, "%sparent_intent: %s\n", in, n.Parent)
		}
		fmt.Fprintf(&b, "%screated_at: %q\n%supdated_at: %q\n", in, ts, in, ts)
		return b.String()
	}
	list := doc.list
	var out []byte
	switch {
	case list.Kind == yaml.SequenceNode && list.Style&yaml.FlowStyle == 0 && len(list.Content) > 0:
		first := list.Content[0]
		indent := leadingSpace(doc.line(first.Line))
		at := doc.lineEnd(lastLine(list))
		out = splice(data, at, at, []byte(block(indent)))
	default:
		// An empty or flow-style list: replace the value with a block list.
		start := doc.offset(list.Line, list.Column)
		end := doc.lineEnd(lastLine(list))
		if list.Kind == yaml.ScalarNode && list.Tag == "!!null" && list.Value == "" {
			start = doc.lineEnd(doc.keyLine) - 1
		}
		out = splice(data, start, end, []byte("\n"+block("  ")))
	}
	if _, _, err := policy.ParseIntents(file, out); err != nil {
		return nil, fmt.Errorf("the new intent would make the policy invalid: %w", err)
	}
	return out, nil
}

func writeList(b *strings.Builder, indent, key string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "%s%s:\n", indent, key)
	for _, it := range items {
		fmt.Fprintf(b, "%s  - %s\n", indent, quote(it))
	}
}

// quote renders s as a double-quoted YAML scalar.
func quote(s string) string { return strconv.Quote(s) }

// doc is a parsed policy file with its text, for positional edits.
type doc struct {
	file    string
	data    []byte
	starts  []int // byte offset of each line (0-based index = line-1)
	list    *yaml.Node
	keyLine int
}

func parseDoc(file string, data []byte) (*doc, error) {
	if _, _, err := policy.ParseIntents(file, data); err != nil {
		return nil, fmt.Errorf("refusing to edit an invalid policy: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	d := &doc{file: file, data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			d.starts = append(d.starts, i+1)
		}
	}
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "active_intents" {
			d.list, d.keyLine = top.Content[i+1], top.Content[i].Line
		}
	}
	return d, nil
}

func (d *doc) findIntent(id string) (*yaml.Node, error) {
	if d.list.Kind == yaml.SequenceNode {
		for _, item := range d.list.Content {
			if v := mapValue(item, "id"); v != nil && v.Value == id {
				return item, nil
			}
		}
	}
	return nil, fmt.Errorf("%s: no intent %s", d.file, id)
}

// offset converts a yaml.v3 position (1-based line, 1-based column in
// characters) to a byte offset.
func (d *doc) offset(line, col int) int {
	start := d.starts[line-1]
	off := start
	for c := 1; c < col && off < len(d.data); c++ {
		_, size := utf8.DecodeRune(d.data[off:])
		off += size
	}
	return off
}

func (d *doc) line(n int) string {
	end := len(d.data)
	if n < len(d.starts) {
		end = d.starts[n]
	}
	return string(d.data[d.starts[n-1]:end])
}

// lineEnd is the offset just past line n's newline.
func (d *doc) lineEnd(n int) int {
	if n < len(d.starts) {
		return d.starts[n]
	}
	return len(d.data)
}

func leadingSpace(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " "))] }

// lastLine is the last line any part of n sits on.
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		if l := lastLine(c); l > last {
			last = l
		}
	}
	if n.Kind == yaml.ScalarNode && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		// A block scalar starts at its indicator; its lines follow.
		last = n.Line + strings.Count(strings.TrimRight(n.Value, "\n"), "\n") + 1
	}
	return last
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// splicer collects replacements of byte ranges and applies them at once.
type splicer struct{ edits []edit }

type edit struct {
	start, end int
	text       string
}

func (s *splicer) apply(data []byte) []byte {
	// Apply from the end of the text backwards so earlier offsets stay
	// valid. Inserts at the same offset must end up in the order they were
	// made, so the later one is applied first.
	order := make([]int, len(s.edits))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := s.edits[order[a]], s.edits[order[b]]
		if ea.start != eb.start {
			return ea.start > eb.start
		}
		return order[a] > order[b]
	})
	sorted := make([]edit, len(order))
	for i, o := range order {
		sorted[i] = s.edits[o]
	}
	s.edits = sorted
	out := append([]byte(nil), data...)
	for _, e := range s.edits {
		out = splice(out, e.start, e.end, []byte(e.text))
	}
	return out
}

func splice(data []byte, start, end int, text []byte) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(text))
	out = append(out, data[:start]...)
	out = append(out, text...)
	return append(out, data[end:]...)
}

// scalar replaces the value of a scalar node, keeping its quoting style.
func (s *splicer) scalar(d *doc, n *yaml.Node, value string) error {
	start, end, err := scalarSpan(d, n)
	if err != nil {
		return err
	}
	s.edits = append(s.edits, edit{start, end, render(n.Style, value)})
	return nil
}

// setOrAdd sets key in mapping m, adding the key after the mapping's last
// line if it is missing.
func (s *splicer) setOrAdd(d *doc, m *yaml.Node, key, value string) error {
	if v := mapValue(m, key); v != nil {
		return s.scalar(d, v, value)
	}
	if m.Style&yaml.FlowStyle != 0 {
		return fmt.Errorf("%s:%d: cannot add %s to a flow-style intent {…}; write it in block style", d.file, m.Line, key)
	}
	indent := strings.Repeat(" ", m.Column-1)
	at := d.lineEnd(lastLine(m))
	style := yaml.Style(0)
	if key == "updated_at" {
		style = yaml.DoubleQuotedStyle
	}
	text := fmt.Sprintf("%s%s: %s\n", indent, key, render(style, value))
	if at == len(d.data) && len(d.data) > 0 && d.data[len(d.data)-1] != '\n' {
		text = "\n" + text
	}
	s.edits = append(s.edits, edit{at, at, text})
	return nil
}

// render writes value in the given scalar style.
func render(style yaml.Style, value string) string {
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		return strconv.Quote(value)
	case style&yaml.SingleQuotedStyle != 0:
		return "'" + strings.ReplaceAll(value, "'", "''") + "'"
	}
	var probe yaml.Node
	if yaml.Unmarshal([]byte("k: "+value), &probe) == nil {
		if v := mapValue(probe.Content[0], "k"); v != nil && v.Value == value && v.Kind == yaml.ScalarNode {
			return value
		}
	}
	return strconv.Quote(value)
}

// scalarSpan finds the bytes of a single-line scalar token.
func scalarSpan(d *doc, n *yaml.Node) (int, int, error) {
	start := d.offset(n.Line, n.Column)
	data := d.data
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := start + 1; i < len(data); i++ {
			switch data[i] {
			case '\\':
				i++
			case '"':
				return start, i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := start + 1; i < len(data); i++ {
			if data[i] == '\'' {
				if i+1 < len(data) && data[i+1] == '\'' {
					i++
					continue
				}
				return start, i + 1, nil
			}
		}
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return 0, 0, fmt.Errorf("%s:%d: block scalars (| or >) cannot be edited in place; write the value on one line", d.file, n.Line)
	default:
		end := start
		for end < len(data) && data[end] != '\n' {
			c := data[end]
			if c == '#' && end > start && (data[end-1] == ' ' || data[end-1] == '\t') {
				break
			}
			if c == ',' || c == ']' || c == '}' {
				break
			}
			end++
		}
		for end > start && (data[end-1] == ' ' || data[end-1] == '\t') {
			end--
		}
		if string(data[start:end]) != n.Value {
			return 0, 0, fmt.Errorf("%s:%d: the value %q spans lines and cannot be edited in place", d.file, n.Line, n.Value)
		}
		return start, end, nil
	}
	return 0, 0, fmt.Errorf("%s:%d: unterminated quoted value", d.file, n.Line)
}

// editSequence adds and removes items of a string sequence, keeping its
// style. It reports whether anything changed.
func (s *splicer) editSequence(d *doc, seq *yaml.Node, add, remove []string) (bool, error) {
	have := map[string]*yaml.Node{}
	for _, it := range seq.Content {
		have[it.Value] = it
	}
	var toRemove []*yaml.Node
	for _, r := range remove {
		n, ok := have[r]
		if !ok {
			return false, fmt.Errorf("%s: owned_scope has no pattern %q", d.file, r)
		}
		toRemove = append(toRemove, n)
		delete(have, r)
	}
	var toAdd []string
	for _, a := range add {
		if err := policy.CheckGlob(a); err != nil {
			return false, fmt.Errorf("pattern %q: %w", a, err)
		}
		if _, dup := have[a]; !dup {
			toAdd = append(toAdd, a)
			have[a] = nil
		}
	}
	if len(have) == 0 {
		return false, errors.New("owned_scope would be empty: an intent needs at least one pattern")
	}
	if len(toAdd)+len(toRemove) == 0 {
		return false, nil
	}
	if seq.Style&yaml.FlowStyle != 0 {
		return true, s.rewriteFlow(d, seq, toAdd, toRemove)
	}
	for _, n := range toRemove {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d.line(n.Line)), "-")) == "" {
			return false, fmt.Errorf("%s:%d: cannot remove an item that does not sit on a line of its own", d.file, n.Line)
		}
		start, end := d.starts[n.Line-1], d.lineEnd(n.Line)
		s.edits = append(s.edits, edit{start, end, ""})
	}
	last := seq.Content[len(seq.Content)-1]
	prefix := d.line(last.Line)[:d.offset(last.Line, last.Column)-d.starts[last.Line-1]]
	if strings.TrimSpace(prefix) != "-" {
		return false, fmt.Errorf("%s:%d: owned_scope items must each sit on their own line", d.file, last.Line)
	}
	at := d.lineEnd(last.Line)
	for _, a := range toAdd {
		s.edits = append(s.edits, edit{at, at, prefix + render(last.Style, a) + "\n"})
	}
	return true, nil
}

// rewriteFlow rewrites the items between a flow sequence's brackets.
func (s *splicer) rewriteFlow(d *doc, seq *yaml.Node, add []string, remove []*yaml.Node) error {
	open := d.offset(seq.Line, seq.Column)
	if d.data[open] != '[' {
		return fmt.Errorf("%s:%d: unexpected flow sequence", d.file, seq.Line)
	}
	var items []string
	for _, it := range seq.Content {
		drop := false
		for _, r := range remove {
			drop = drop || r == it
		}
		if drop {
			continue
		}
		st, en, err := scalarSpan(d, it)
		if err != nil {
			return err
		}
		items = append(items, string(d.data[st:en]))
	}
	for _, a := range add {
		items = append(items, strconv.Quote(a))
	}
	closing := -1
	inDouble, inSingle := false, false
	for i := open + 1; i < len(d.data) && closing < 0; i++ {
		c := d.data[i]
		switch {
		case inDouble && c == '\\':
			i++
		case inDouble:
			inDouble = c != '"'
		case inSingle:
			inSingle = c != '\''
		case c == '"':
			inDouble = true
		case c == '\'':
			inSingle = true
		case c == ']':
			closing = i
		}
	}
	if closing < 0 {
		return fmt.Errorf("%s:%d: unterminated flow sequence", d.file, seq.Line)
	}
	s.edits = append(s.edits, edit{open, closing + 1, "[" + strings.Join(items, ", ") + "]"})
	return nil
}
