package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ApprovalRule says which allowed changes wait for a human: the
// operations and paths it covers, and optionally a rate (more than
// MoreThan of them within Within) or a size (deletions of files larger
// than LargerThan). A matching change is held until a human approves or
// denies it, or Timeout passes (a denial).
type ApprovalRule struct {
	// Name identifies the rule in messages and in `intentfs approvals`;
	// "line N" when the policy gives none.
	Name string
	// Intent is the intent whose changes the rule covers, "" for a rule
	// of the whole workspace.
	Intent string
	// Ops are the operations covered, with groups expanded.
	Ops []Op
	// Paths are the globs covered; none covers every path.
	Paths []string
	// MoreThan and Within make a rate rule: a change is held once more
	// than MoreThan matching changes (it included) were made within
	// Within. MoreThan 0 holds every matching change.
	MoreThan int
	Within   time.Duration
	// LargerThan, if above 0, holds only deletions of files larger than
	// this many bytes: measured on the content a change destroys (a
	// whole file for an unlink, what a truncation cuts off).
	LargerThan int64
	// Timeout is how long a held change waits before it is denied.
	Timeout time.Duration
	// Line and Column are where the rule starts in the policy file.
	Line, Column int

	paths scopeSet
}

// DefaultApprovalTimeout is how long a held change waits for a human
// when its rule names no timeout.
const DefaultApprovalTimeout = 5 * time.Minute

// Limits of the approval fields: a rate counts at most this many changes,
// over at most an hour; a hold waits at most a day.
const (
	maxApprovalCount   = 1_000_000
	maxApprovalWithin  = time.Hour
	maxApprovalTimeout = 24 * time.Hour
)

// Key identifies the rule across policy reloads, for its rate counter
// and for decisions that cover the rest of a burst.
func (a *ApprovalRule) Key() string { return a.Intent + "#" + a.Name }

// Matches reports whether the rule covers op on any of paths (a rename
// or link is covered when either of its names is).
func (a *ApprovalRule) Matches(op Op, paths ...string) bool {
	if !slices.Contains(a.Ops, op) {
		return false
	}
	if len(a.Paths) == 0 {
		return true
	}
	for _, p := range paths {
		if p != "" && a.paths.matches(p) {
			return true
		}
	}
	return false
}

// MatchesEffect is Matches, where a change that destroys content of an
// existing file (Request.Destroys) is also covered by a rule on unlink:
// a rule on deleting files holds every change that destroys one, whatever
// the operation is called.
func (a *ApprovalRule) MatchesEffect(op Op, destroys bool, paths ...string) bool {
	return a.Matches(op, paths...) || destroys && a.Matches(OpUnlink, paths...)
}

// Describe says in words what the rule holds, for the agent and the
// human: "more than 20 of unlink, rmdir within 10s on src/**".
func (a *ApprovalRule) Describe() string {
	var b strings.Builder
	ops := make([]string, len(a.Ops))
	for i, o := range a.Ops {
		ops[i] = string(o)
	}
	switch {
	case a.MoreThan > 0:
		fmt.Fprintf(&b, "more than %d of %s within %s", a.MoreThan, strings.Join(ops, ", "), a.Within)
	default:
		fmt.Fprintf(&b, "every %s", strings.Join(ops, ", "))
	}
	if a.LargerThan > 0 {
		fmt.Fprintf(&b, " of a file larger than %s", FormatSize(a.LargerThan))
	}
	if len(a.Paths) > 0 {
		fmt.Fprintf(&b, " on %s", strings.Join(a.Paths, ", "))
	}
	if a.Intent != "" {
		fmt.Fprintf(&b, " under %s", a.Intent)
	}
	return b.String()
}

// ApprovalRulesFor returns the rules that cover changes made under
// intent: the workspace's, then the intent's own.
func (s *Snapshot) ApprovalRulesFor(intent string) []*ApprovalRule {
	if s == nil || s.Intents == nil {
		return nil
	}
	out := s.Intents.Approvals
	if in := s.Intents.Get(intent); in != nil && len(in.Approvals) > 0 {
		out = append(slices.Clip(out), in.Approvals...)
	}
	return out
}

// HasApprovalRules reports whether any rule exists, so a mount without
// them spends nothing on them.
func (s *Snapshot) HasApprovalRules() bool {
	return s != nil && s.Intents != nil && s.Intents.hasApprovals
}

// approvalOpGroups are the operation names a rule may use besides the
// operations themselves.
var approvalOpGroups = map[string][]Op{
	"create": {OpCreate, OpMkdir, OpMknod, OpSymlink, OpLink},
	"write":  {OpOpenWrite, OpTruncate, OpFallocate, OpCopyFileRange},
	"delete": {OpUnlink, OpRmdir},
	"xattr":  {OpSetxattr, OpRemovexattr},
}

// approvalOps lists every operation a rule may name on its own.
func approvalOps() []Op {
	return []Op{OpCreate, OpOpenWrite, OpTruncate, OpChmod, OpChown, OpUtimes, OpMkdir, OpMknod, OpSymlink,
		OpLink, OpUnlink, OpRmdir, OpRename, OpSetxattr, OpRemovexattr, OpFallocate, OpCopyFileRange}
}

var approvalMapping = mappingKind{noun: "approval rule ", where: "this approval rule", unknown: SevError,
	known: []string{"name", "ops", "paths", "more_than", "within", "larger_than", "timeout"}}

// approvals parses an `approvals:` list, of the workspace (intent "") or
// of one intent.
func (p *parser) approvals(v *yaml.Node, intent string) []*ApprovalRule {
	if v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "approvals must be a list of rules (each item starting with `- ops: [...]`)")
		return nil
	}
	var out []*ApprovalRule
	names := map[string]int{}
	for _, item := range v.Content {
		r := p.approvalRule(item, intent)
		if r == nil {
			continue
		}
		if line, dup := names[r.Name]; dup {
			p.errorf(item, "approval rule name %q is used twice (first on line %d): give each rule its own name", r.Name, line)
			continue
		}
		names[r.Name] = r.Line
		out = append(out, r)
	}
	return out
}

// approvalRule parses one approval rule; it returns nil, after reporting
// every problem, when any part of it is wrong: a rule that holds other
// changes than its author meant must not load.
func (p *parser) approvalRule(n *yaml.Node, intent string) *ApprovalRule {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "an approval rule must be a mapping such as {ops: [delete], more_than: 50, within: 10s}")
		return nil
	}
	r := &ApprovalRule{Intent: intent, Line: n.Line, Column: n.Column, Timeout: DefaultApprovalTimeout,
		Name: "line " + strconv.Itoa(n.Line)}
	fields := p.fields(n, approvalMapping)
	// Every step runs, so one reading reports every problem of the rule.
	ok := p.approvalName(fields, r)
	ok = p.approvalOps(n, fields, r) && ok
	ok = p.approvalPaths(fields, r) && ok
	ok = p.approvalRate(fields, r) && ok
	ok = p.approvalSize(fields, r) && ok
	if v, found := fields["timeout"]; found {
		r.Timeout = p.duration(v, "timeout", maxApprovalTimeout)
		ok = r.Timeout != 0 && ok
	}
	if !ok {
		return nil
	}
	return r
}

// approvalName reads the rule's name, one word, which approvals are
// answered by; without one the rule is named by its line.
func (p *parser) approvalName(fields map[string]*yaml.Node, r *ApprovalRule) bool {
	v, found := fields["name"]
	if !found {
		return true
	}
	if v.Kind != yaml.ScalarNode || strings.TrimSpace(v.Value) == "" || strings.ContainsAny(v.Value, " \t\n#") {
		p.errorf(v, "an approval rule name must be one word such as mass-delete")
		return false
	}
	r.Name = v.Value
	return true
}

// approvalOps reads ops, the operations the rule holds, which it must
// have: a group name (create, write, delete, xattr) or one operation.
func (p *parser) approvalOps(n *yaml.Node, fields map[string]*yaml.Node, r *ApprovalRule) bool {
	v, found := fields["ops"]
	if !found {
		p.errorf(n, "approval rule needs `ops:`, the operations it holds (for example [delete] or [write, rename])")
		return false
	}
	ok := true
	for i, name := range p.strList(v, "ops") {
		ops, known := approvalOpGroups[name]
		if !known && slices.Contains(approvalOps(), Op(name)) {
			ops, known = []Op{Op(name)}, true
		}
		if !known {
			p.errorf(v.Content[i], "unknown operation %q in ops (use create, write, delete, rename, chmod, chown, utimes, xattr, or one of %s)", name, opList())
			ok = false
			continue
		}
		for _, o := range ops {
			if !slices.Contains(r.Ops, o) {
				r.Ops = append(r.Ops, o)
			}
		}
	}
	if len(r.Ops) == 0 && ok {
		p.errorf(v, "ops must list at least one operation")
		ok = false
	}
	return ok
}

// approvalPaths reads paths, the globs the rule is limited to (every path
// when absent).
func (p *parser) approvalPaths(fields map[string]*yaml.Node, r *ApprovalRule) bool {
	v, found := fields["paths"]
	if !found {
		return true
	}
	ok := true
	r.Paths = p.strList(v, "paths")
	for i, g := range r.Paths {
		if err := CheckGlob(g); err != nil {
			p.errorf(v.Content[i], "approval paths pattern %q: %v", g, err)
			ok = false
		}
	}
	r.paths = newScopeSet(r.Paths)
	return ok
}

// approvalRate reads more_than and within, which hold a burst of changes
// and so come together or not at all.
func (p *parser) approvalRate(fields map[string]*yaml.Node, r *ApprovalRule) bool {
	ok := true
	if v, found := fields["more_than"]; found {
		num, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || num < 1 || num > maxApprovalCount {
			p.errorf(v, "more_than must be a whole number from 1 to %d, not %q", maxApprovalCount, v.Value)
			ok = false
		} else {
			r.MoreThan = num
		}
	}
	if v, found := fields["within"]; found {
		r.Within = p.duration(v, "within", maxApprovalWithin)
		if r.Within == 0 {
			ok = false
		}
	}
	switch w, m := fields["within"], fields["more_than"]; {
	case m != nil && w == nil:
		p.errorf(m, "more_than needs `within:`, the time the changes are counted over (for example 10s)")
		ok = false
	case w != nil && m == nil:
		p.errorf(w, "within needs `more_than:`, how many changes within it are held")
		ok = false
	}
	return ok
}

// approvalSize reads larger_than, which holds the removal of a large file
// and so applies to deletions only.
func (p *parser) approvalSize(fields map[string]*yaml.Node, r *ApprovalRule) bool {
	v, found := fields["larger_than"]
	if !found {
		return true
	}
	ok := true
	size, err := ParseSize(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || size < 1 {
		p.errorf(v, "larger_than must be a size such as 1MiB, 512KiB or 100000 (bytes), not %q", v.Value)
		ok = false
	} else {
		r.LargerThan = size
	}
	for _, o := range r.Ops {
		if o != OpUnlink && o != OpRmdir {
			p.errorf(v, "larger_than applies to deletions only: with it, ops may list only delete, unlink or rmdir (not %s)", o)
			ok = false
			break
		}
	}
	return ok
}

// duration parses a positive duration of at most limit.
func (p *parser) duration(v *yaml.Node, key string, limit time.Duration) time.Duration {
	d, err := time.ParseDuration(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || d < time.Second || d > limit {
		p.errorf(v, "%s must be a duration from 1s to %s such as 10s or 5m, not %q", key, limit, v.Value)
		return 0
	}
	return d
}

func opList() string {
	var s []string
	for _, o := range approvalOps() {
		s = append(s, string(o))
	}
	return strings.Join(s, ", ")
}

// ParseSize reads a size in bytes: a whole number, optionally followed by
// B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000).
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("not a size: %q", s)
	}
	return n * mult, nil
}

// FormatSize writes a size as a person reads it: 1MiB, 1536KiB, 100B.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
