package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"

	"github.com/intentfs/intentfs/internal/safeio"
)

// MaxPolicyBytes bounds the size of a policy file; anything larger is
// refused rather than parsed, so a runaway file cannot exhaust the daemon.
// A policy of thousands of intents is well under a megabyte.
const MaxPolicyBytes = 4 << 20

// LoadIntents reads and validates the policy file at path (see
// LoadIntentsFrom).
func LoadIntents(path string) (*Intents, []Diagnostic, error) {
	return LoadIntentsFrom(filepath.Dir(path), filepath.Base(path))
}

// LoadIntentsFrom reads and validates the policy file rel below root. The
// file must be a regular file of at most MaxPolicyBytes reached without a
// symlink (safeio.ReadFile): a FIFO, a device or a link in its place is an
// error, never a hang or a read of the link's target.
func LoadIntentsFrom(root, rel string) (*Intents, []Diagnostic, error) {
	path := filepath.Join(root, rel)
	data, err := safeio.ReadFile(root, rel, MaxPolicyBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("policy file %s does not exist: create it with `intentfs init`", path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return ParseIntents(path, data)
}

// ParseIntents validates data as a policy file named file. It returns the
// intents and any warnings; on any error it returns a *ValidationError that
// lists every diagnostic found.
func ParseIntents(file string, data []byte) (*Intents, []Diagnostic, error) {
	p := &parser{file: file}
	intents := p.parse(data)
	var hasErr bool
	for _, d := range p.diags {
		if d.Severity == SevError {
			hasErr = true
		}
	}
	if hasErr {
		return nil, p.diags, &ValidationError{Diagnostics: p.diags}
	}
	return intents, p.diags, nil
}

type parser struct {
	file  string
	diags []Diagnostic
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	p.add(n, SevError, format, args...)
}

func (p *parser) warnf(n *yaml.Node, format string, args ...any) {
	p.add(n, SevWarning, format, args...)
}

func (p *parser) add(n *yaml.Node, sev Severity, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	p.diags = append(p.diags, Diagnostic{File: p.file, Line: line, Column: col, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// mappingKind says which keys one kind of YAML mapping in the policy may
// hold, and how its diagnostics name it.
type mappingKind struct {
	// noun prefixes "field" in a message on an unknown key ("upstream "),
	// where names the mapping in one on a repeated key ("this intent").
	noun, where string
	known       []string
	// unknown is SevWarning where an unknown key is ignored (so a policy
	// written for a later version still loads) and SevError where it is
	// refused (an approval rule whose condition is misspelt must not hold
	// fewer changes than its author meant).
	unknown Severity
}

// fields returns the values of mapping n by key. An unknown key is
// reported with kind.unknown's severity and left out; a repeated key is an
// error, and its first value is kept. Every policy mapping is read this
// way, so a typo is reported alike wherever it is.
func (p *parser) fields(n *yaml.Node, kind mappingKind) map[string]*yaml.Node {
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(kind.known, k.Value) {
			ignored := ""
			if kind.unknown != SevError {
				ignored = " is ignored"
			}
			p.add(k, kind.unknown, "unknown %sfield %q%s (known fields: %s)", kind.noun, k.Value, ignored, strings.Join(kind.known, ", "))
			continue
		}
		if _, dup := fields[k.Value]; dup {
			p.errorf(k, "field %q appears twice in %s: keep one", k.Value, kind.where)
			continue
		}
		fields[k.Value] = v
	}
	return fields
}

var yamlLineRe = strings.NewReplacer("yaml: ", "")

func (p *parser) parse(data []byte) *Intents {
	out := &Intents{File: p.file, byID: map[string]*Intent{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 1
		msg := yamlLineRe.Replace(err.Error())
		// yaml.v3 reports "line N: ..." for syntax errors.
		if _, after, ok := strings.Cut(msg, "line "); ok {
			if num, rest, ok := strings.Cut(after, ":"); ok {
				if n, err := strconv.Atoi(num); err == nil {
					line = n
					msg = strings.TrimSpace(rest)
				}
			}
		}
		p.add(&yaml.Node{Line: line, Column: 1}, SevError, "YAML syntax: %s (fix the indentation or quoting on this line)", msg)
		return out
	}
	if len(doc.Content) == 0 {
		p.errorf(nil, "the file is empty: it needs a top-level `active_intents:` list")
		return out
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "the top level must be a mapping with an `active_intents:` key")
		return out
	}
	var list *yaml.Node
	sawUpstream, sawEnforcement := false, false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "active_intents":
			list = v
		case "approvals":
			out.Approvals = p.approvals(v, "")
		case "notes":
			out.Notes = p.notes(v)
		case "upstream":
			if sawUpstream {
				p.errorf(k, "top-level key `upstream` appears twice: keep one")
				continue
			}
			sawUpstream = true
			out.Upstream = p.upstream(k, v)
		case "enforcement":
			if sawEnforcement {
				p.errorf(k, "top-level key `enforcement` appears twice: keep one")
				continue
			}
			sawEnforcement = true
			out.Enforcement = p.enforcement(v, "the top-level `enforcement`")
		default:
			p.warnf(k, "unknown top-level key %q is ignored (expected `active_intents`, `approvals`, `enforcement`, `notes` or `upstream`)", k.Value)
		}
	}
	out.hasApprovals = len(out.Approvals) > 0
	if list == nil {
		p.errorf(root, "missing the top-level `active_intents:` list")
		return out
	}
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return out // an empty list is a valid policy that allows nothing
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(list, "`active_intents` must be a list of intents (each item starting with `- id: ...`)")
		return out
	}
	for _, item := range list.Content {
		in := p.intent(item)
		if in == nil {
			continue
		}
		if prev, dup := out.byID[in.ID]; dup {
			p.errorf(item, "duplicate intent id %q (first defined on line %d): give each intent a unique id", in.ID, prev.Line)
			continue
		}
		out.byID[in.ID] = in
		out.List = append(out.List, in)
		if len(in.Approvals) > 0 {
			out.hasApprovals = true
		}
	}
	p.checkParents(out)
	return out
}

var intentMapping = mappingKind{where: "this intent", unknown: SevWarning, known: []string{"id", "name", "status", "version", "owned_scope", "constraints",
	"acceptance_criteria", "related_specs", "parent_intent", "tags", "created_at", "updated_at", "shared", "on_stale", "approvals", "enforcement"}}

// intent parses one item of `active_intents`; it returns nil when the
// item cannot be an intent at all (no valid id), after reporting every
// problem it has.
func (p *parser) intent(n *yaml.Node) *Intent {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "each intent must be a mapping with id, name, status and owned_scope")
		return nil
	}
	in := &Intent{Line: n.Line, Version: 1}
	fields := p.fields(n, intentMapping)
	ok := p.intentIdentity(n, fields, in)
	p.intentScope(n, fields, in)
	in.Constraints = p.optList(fields, "constraints")
	in.AcceptanceCriteria = p.criteria(fields["acceptance_criteria"])
	in.Tags = p.optList(fields, "tags")
	if v, ok := fields["related_specs"]; ok {
		in.RelatedSpecs = p.specs(v)
	}
	if v, ok := fields["approvals"]; ok {
		in.Approvals = p.approvals(v, in.ID)
	}
	if v, ok := fields["enforcement"]; ok {
		in.Enforcement = p.enforcement(v, "`enforcement` of intent "+in.ID)
	}
	p.intentParent(fields, in)
	p.intentSessions(fields, in)
	p.intentTimestamps(fields, in)
	if !ok {
		return nil
	}
	return in
}

// intentIdentity reads what names an intent and where it stands: id,
// name, status and version. It reports whether the id is usable; without
// one the intent cannot be selected or recorded under.
func (p *parser) intentIdentity(n *yaml.Node, fields map[string]*yaml.Node, in *Intent) bool {
	ok := true
	if v, found := p.str(n, fields, "id", true); found {
		in.ID = v
		if !ValidID(v) {
			p.errorf(fields["id"], "id %q does not match ^[A-Z]+-\\d{3,}$ (write it like INT-001)", v)
			ok = false
		}
	} else {
		ok = false
	}
	if v, found := p.str(n, fields, "name", true); found {
		in.Name = v
		if l := len([]rune(v)); l < 3 || l > 200 {
			p.errorf(fields["name"], "name must be 3 to 200 characters long, it is %d", l)
		}
	}
	if v, found := p.str(n, fields, "status", true); found {
		in.Status = Status(v)
		if !in.Status.Valid() {
			p.errorf(fields["status"], "status %q is not one of %s", v, statusList())
		}
	}
	if v, found := fields["version"]; found {
		num, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || num < 1 {
			p.errorf(v, "version must be an integer of at least 1, not %q", v.Value)
		} else {
			in.Version = num
		}
	}
	return ok
}

// intentScope reads owned_scope, the globs the intent may change, which
// every intent must have: each must be a valid glob that stays inside the
// workspace, and its line is kept for diagnostics that name one glob.
func (p *parser) intentScope(n *yaml.Node, fields map[string]*yaml.Node, in *Intent) {
	v, found := fields["owned_scope"]
	if !found {
		p.errorf(n, "intent %q has no owned_scope: add a list of globs it may change", in.ID)
		return
	}
	in.OwnedScope = p.strList(v, "owned_scope")
	in.scopeLines = map[int]int{}
	for i, item := range v.Content {
		in.scopeLines[i] = item.Line
	}
	if len(in.OwnedScope) == 0 && v.Kind == yaml.SequenceNode {
		p.errorf(v, "owned_scope must list at least one glob (e.g. \"src/**\")")
	}
	for i, g := range in.OwnedScope {
		if err := CheckGlob(g); err != nil {
			p.errorf(v.Content[i], "owned_scope pattern %q: %v", g, err)
		}
	}
	in.scope = newScopeSet(in.OwnedScope)
}

// intentParent reads parent_intent; that the parent exists and contains
// the child's scope is checked once every intent is read (checkParents).
func (p *parser) intentParent(fields map[string]*yaml.Node, in *Intent) {
	v, found := fields["parent_intent"]
	if !found || v.Tag == "!!null" {
		return
	}
	if v.Kind != yaml.ScalarNode || !ValidID(v.Value) {
		p.errorf(v, "parent_intent must be an intent id like INT-001, not %q", v.Value)
		return
	}
	in.ParentIntent = v.Value
}

// intentSessions reads how agent sessions share the intent: whether
// several may hold it at once (shared), and what a write to a file changed
// since the session read it does (on_stale, deny unless set).
func (p *parser) intentSessions(fields map[string]*yaml.Node, in *Intent) {
	if v, found := fields["shared"]; found {
		if v.Kind != yaml.ScalarNode || (v.Value != "true" && v.Value != "false") {
			p.errorf(v, "shared must be true or false, not %q (true lets several agent sessions hold the intent at once)", v.Value)
		} else {
			in.Shared = v.Value == "true"
		}
	}
	in.OnStale = StaleDeny
	if v, found := fields["on_stale"]; found {
		switch OnStale(v.Value) {
		case StaleDeny, StaleRecord:
			if v.Kind == yaml.ScalarNode {
				in.OnStale = OnStale(v.Value)
				break
			}
			fallthrough
		default:
			p.errorf(v, "on_stale must be deny or record, not %q (deny refuses a write to a file changed since the session read it)", v.Value)
		}
	}
}

// intentTimestamps reads created_at and updated_at, which must be RFC 3339
// so that tools sort and compare them alike.
func (p *parser) intentTimestamps(fields map[string]*yaml.Node, in *Intent) {
	for _, f := range []string{"created_at", "updated_at"} {
		v, found := fields[f]
		if !found {
			continue
		}
		if v.Kind != yaml.ScalarNode {
			p.errorf(v, "%s must be an RFC 3339 timestamp such as 2026-01-31T09:00:00Z", f)
			continue
		}
		if _, err := time.Parse(time.RFC3339, v.Value); err != nil {
			p.errorf(v, "%s %q is not an RFC 3339 timestamp such as 2026-01-31T09:00:00Z", f, v.Value)
			continue
		}
		if f == "created_at" {
			in.CreatedAt = v.Value
		} else {
			in.UpdatedAt = v.Value
		}
	}
}

func statusList() string {
	s := make([]string, len(Statuses()))
	for i, st := range Statuses() {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// str reads a required or optional scalar string field.
func (p *parser) str(parent *yaml.Node, fields map[string]*yaml.Node, key string, required bool) (string, bool) {
	v, ok := fields[key]
	if !ok {
		if required {
			p.errorf(parent, "intent is missing the required field %q", key)
		}
		return "", false
	}
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || strings.TrimSpace(v.Value) == "" {
		p.errorf(v, "%s must be a non-empty string", key)
		return "", false
	}
	return v.Value, true
}

func (p *parser) strList(v *yaml.Node, key string) []string {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "%s must be a list (items starting with `- `)", key)
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		if item.Kind != yaml.ScalarNode || strings.TrimSpace(item.Value) == "" {
			p.errorf(item, "each %s item must be a non-empty string", key)
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

// notes reads the notes: section, `notes: {include: [cmdline, source]}`.
func (p *parser) notes(v *yaml.Node) Notes {
	var out Notes
	if v.Tag == "!!null" {
		return out
	}
	if v.Kind != yaml.MappingNode {
		p.errorf(v, "notes must be a mapping such as `notes: {include: [cmdline, source]}`")
		return out
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, fv := v.Content[i], v.Content[i+1]
		if k.Value != "include" {
			p.warnf(k, "unknown notes field %q is ignored (known: include)", k.Value)
			continue
		}
		if fv.Tag == "!!null" {
			continue
		}
		if fv.Kind != yaml.SequenceNode {
			p.errorf(fv, "notes.include must be a list, such as [cmdline, source]")
			continue
		}
		for _, item := range fv.Content {
			if item.Kind != yaml.ScalarNode || !slices.Contains(NotesIncludes(), item.Value) {
				p.errorf(item, "notes.include: %q is not a field the notes can carry (one of %s)", item.Value, strings.Join(NotesIncludes(), ", "))
				continue
			}
			out.Include = append(out.Include, item.Value)
		}
	}
	return out
}

func (p *parser) optList(fields map[string]*yaml.Node, key string) []string {
	v, ok := fields[key]
	if !ok || v.Tag == "!!null" {
		return nil
	}
	return p.strList(v, key)
}

// criteria accepts plain strings or {text, check} mappings.
func (p *parser) criteria(v *yaml.Node) []Criterion {
	if v == nil || v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "acceptance_criteria must be a list")
		return nil
	}
	var out []Criterion
	for _, item := range v.Content {
		switch item.Kind {
		case yaml.ScalarNode:
			out = append(out, Criterion{Text: item.Value})
		case yaml.MappingNode:
			var c struct {
				Text  string `yaml:"text"`
				Check string `yaml:"check"`
			}
			if err := item.Decode(&c); err != nil || c.Text == "" {
				p.errorf(item, "an acceptance criterion mapping needs a `text:` string")
				continue
			}
			out = append(out, Criterion(c))
		default:
			p.errorf(item, "an acceptance criterion must be a string or {text: ..., check: ...}")
		}
	}
	return out
}

func (p *parser) specs(v *yaml.Node) []RelatedSpec {
	if v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "related_specs must be a list of {type, ref}")
		return nil
	}
	var out []RelatedSpec
	for _, item := range v.Content {
		var s struct {
			Type string `yaml:"type"`
			Ref  string `yaml:"ref"`
		}
		if item.Kind != yaml.MappingNode || item.Decode(&s) != nil {
			p.errorf(item, "each related_specs item must be a mapping with type and ref")
			continue
		}
		if !slices.Contains(RelatedSpecTypes(), s.Type) {
			p.errorf(item, "related_specs type %q is not one of %s", s.Type, strings.Join(RelatedSpecTypes(), ", "))
			continue
		}
		if s.Ref == "" {
			p.errorf(item, "related_specs item needs a non-empty ref")
			continue
		}
		out = append(out, RelatedSpec(s))
	}
	return out
}

func (p *parser) checkParents(out *Intents) {
	for _, in := range out.List {
		if in.ParentIntent == "" {
			continue
		}
		n := &yaml.Node{Line: in.Line, Column: 1}
		if in.ParentIntent == in.ID {
			p.errorf(n, "intent %s names itself as parent_intent", in.ID)
		} else if parent := out.byID[in.ParentIntent]; parent == nil {
			p.errorf(n, "intent %s: parent_intent %s is not defined in this file", in.ID, in.ParentIntent)
		} else if pat, sample, ok := escapesParent(in, parent); !ok {
			p.errorf(&yaml.Node{Line: in.scopeLines[pat], Column: 1}, "owned_scope pattern %q of %s is not inside the scope of its parent %s (%s): it matches %q; narrow it or widen the parent",
				in.OwnedScope[pat], in.ID, parent.ID, strings.Join(parent.OwnedScope, ", "), sample)
		}
	}
	// A parent chain must end: INT-002 → INT-001 → INT-002 is refused.
	for _, in := range out.List {
		seen := map[string]bool{in.ID: true}
		for cur := in; cur.ParentIntent != ""; {
			next := out.byID[cur.ParentIntent]
			if next == nil {
				break
			}
			if seen[next.ID] {
				p.errorf(&yaml.Node{Line: in.Line, Column: 1}, "intent %s: parent_intent forms a cycle through %s", in.ID, next.ID)
				break
			}
			seen[next.ID] = true
			cur = next
		}
	}
}

// CheckGlob rejects patterns that are not valid doublestar syntax or that
// could never match a workspace-relative path.
func CheckGlob(g string) error {
	switch {
	case strings.HasPrefix(g, "/"):
		return errors.New("patterns are relative to the workspace root: remove the leading /")
	case g == ".." || strings.HasPrefix(g, "../") || strings.Contains(g, "/../"):
		return errors.New("patterns may not climb out of the workspace: remove the .. segments")
	case !doublestar.ValidatePattern(g):
		return errors.New("not a valid glob (check brackets and braces)")
	}
	return nil
}
