// Package intentcontext builds the context an agent loads when it selects an
// intent: an <intent_context> XML block, a form agents' prompts can quote
// whole and models keep apart from the rest, curated from the policy, the ledger, the intent map and the related specs, and kept
// within a byte budget.
package intentcontext

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// DefaultBudget is the most bytes a context block may take (~4,000 tokens).
const DefaultBudget = 16384

// Limits on what is gathered before the budget is applied.
const (
	maxRecentChanges = 20
	maxRelatedFiles  = 100
	specExcerptBytes = 2048
	// maxTextBytes caps any single text when even the smallest block
	// would not fit the budget (hostile policies).
	maxTextBytes = 256
)

// Input is what a context is built from.
type Input struct {
	Intents *policy.Intents
	ID      string
	// LedgerPath is read for the intent's changes; missing is fine.
	LedgerPath string
	// Source is the workspace root, for related spec excerpts.
	Source string
	// MapFiles are the intent's files from intent_map.md, oldest first.
	MapFiles []string
	Budget   int
}

type change struct {
	time, event, path, process string
}

type specExcerpt struct {
	typ, ref, text string
}

// context is the gathered material; render turns it into XML.
type intentContext struct {
	in        *policy.Intent
	parents   []*policy.Intent
	scope     []string
	cons      []string
	crit      []policy.Criterion
	files     []string // most recent first
	changes   []change // newest first
	specs     []specExcerpt
	truncated bool
	textCap   int
}

// Build returns the context block for intent in.ID.
func Build(in Input) ([]byte, error) {
	it := in.Intents.Get(in.ID)
	if it == nil {
		return nil, fmt.Errorf("unknown intent %q", in.ID)
	}
	if in.Budget <= 0 {
		in.Budget = DefaultBudget
	}
	c := &intentContext{in: it, scope: it.OwnedScope, cons: it.Constraints, crit: it.AcceptanceCriteria}
	for p := in.Intents.Get(it.ParentIntent); p != nil && len(c.parents) < 16; p = in.Intents.Get(p.ParentIntent) {
		c.parents = append(c.parents, p)
	}
	if err := c.fromLedger(in.LedgerPath, in.ID); err != nil {
		return nil, err
	}
	c.mergeMapFiles(in.MapFiles)
	for _, s := range it.RelatedSpecs {
		if in.Source == "" || strings.Contains(s.Ref, "://") {
			continue
		}
		rel, ok := policy.CleanRel(s.Ref)
		if !ok {
			continue
		}
		b, err := safeio.ReadPrefix(in.Source, rel, specExcerptBytes)
		if err != nil {
			continue // a spec that is missing or not a plain file is skipped
		}
		c.specs = append(c.specs, specExcerpt{typ: s.Type, ref: s.Ref, text: string(b)})
	}
	return c.fit(in.Budget), nil
}

// fromLedger collects the intent's files and latest changes.
func (c *intentContext) fromLedger(path, id string) error {
	if path == "" {
		return nil
	}
	var recent []change
	var order []string
	live := map[string]bool{}
	err := ledger.Scan(path, func(_ int, r *ledger.Record) error {
		g := r.Gov()
		if ledger.Str(g.IntentID) != id || ledger.ClassOf(g.Event) == "" {
			return nil
		}
		p := r.Path()
		comm := ""
		if g.Process != nil {
			comm = g.Process.Comm
		}
		recent = append(recent, change{time: r.Timestamp, event: string(g.Event), path: p, process: comm})
		if len(recent) > maxRecentChanges {
			recent = recent[1:]
		}
		switch g.Event {
		case ledger.EventDelete, ledger.EventRmdir:
			delete(live, p)
		case ledger.EventRename:
			delete(live, g.FromPath)
			fallthrough
		default:
			if g.Event != ledger.EventMkdir {
				live[p] = true
				order = append(order, p)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the ledger: %w", err)
	}
	for i := len(recent) - 1; i >= 0; i-- {
		c.changes = append(c.changes, recent[i])
	}
	seen := map[string]bool{}
	for i := len(order) - 1; i >= 0 && len(c.files) < maxRelatedFiles; i-- {
		if p := order[i]; live[p] && !seen[p] {
			seen[p] = true
			c.files = append(c.files, p)
		}
	}
	return nil
}

func (c *intentContext) mergeMapFiles(files []string) {
	seen := map[string]bool{}
	for _, f := range c.files {
		seen[f] = true
	}
	for i := len(files) - 1; i >= 0 && len(c.files) < maxRelatedFiles; i-- {
		if !seen[files[i]] {
			seen[files[i]] = true
			c.files = append(c.files, files[i])
		}
	}
}

// fit renders the context, dropping what an agent needs least first until
// it fits: oldest recent changes first, then spec excerpts, then the oldest
// related files; as a last resort, long texts are cut and trailing list
// items dropped, so even a hostile policy yields a well-formed block.
func (c *intentContext) fit(budget int) []byte {
	out := c.render()
	for len(out) > budget {
		over := len(out) - budget + len(` truncated="true"`)
		c.truncated = true
		switch {
		case len(c.changes) > 0:
			c.changes = c.changes[:keep(len(c.changes), over, func(i int) int {
				ch := c.changes[i]
				return 60 + len(c.text(ch.time)+c.text(ch.event)+c.text(ch.path)+c.text(ch.process))
			})]
		case len(c.specs) > 0:
			c.specs = c.specs[:keep(len(c.specs), over, func(i int) int { return 50 + len(c.text(c.specs[i].text)+c.text(c.specs[i].ref)) })]
		case len(c.files) > 0:
			c.files = c.files[:keep(len(c.files), over, func(i int) int { return 20 + len(c.text(c.files[i])) })]
		case c.textCap == 0:
			c.textCap = maxTextBytes
		case len(c.cons) > 0:
			c.cons = c.cons[:keep(len(c.cons), over, func(i int) int { return 30 + len(c.text(c.cons[i])) })]
		case len(c.crit) > 0:
			c.crit = c.crit[:keep(len(c.crit), over, func(i int) int { return 40 + len(c.text(c.crit[i].Text)+c.text(c.crit[i].Check)) })]
		case len(c.parents) > 0:
			c.parents = c.parents[:len(c.parents)-1]
		case len(c.scope) > 1:
			c.scope = c.scope[:keep(len(c.scope), over, func(i int) int { return 25 + len(c.text(c.scope[i])) })]
		case c.textCap > 8:
			c.textCap /= 2
		default:
			return out // nothing left to cut; cannot happen with a sane budget
		}
		out = c.render()
	}
	return out
}

// keep returns how many leading items of a list to keep so that dropping
// the rest (from the end, the oldest or least important) frees at least
// over bytes; size(i) is item i's rendered size. At least one is dropped.
func keep(n, over int, size func(i int) int) int {
	freed := 0
	for n > 0 {
		n--
		freed += size(n)
		if freed >= over {
			break
		}
	}
	return n
}

func (c *intentContext) text(s string) string {
	if c.textCap > 0 && len(s) > c.textCap {
		s = strings.ToValidUTF8(s[:c.textCap], "") + "…"
	}
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (c *intentContext) render() []byte {
	var b bytes.Buffer
	in := c.in
	fmt.Fprintf(&b, `<intent_context id="%s" name="%s" status="%s" version="%s"`, c.text(in.ID), c.text(in.Name), c.text(string(in.Status)), strconv.Itoa(in.Version))
	if c.truncated {
		b.WriteString(` truncated="true"`)
	}
	b.WriteString(">\n  <scope>\n")
	for _, p := range c.scope {
		fmt.Fprintf(&b, "    <pattern>%s</pattern>\n", c.text(p))
	}
	b.WriteString("  </scope>\n  <constraints>\n")
	for _, s := range c.cons {
		fmt.Fprintf(&b, "    <constraint>%s</constraint>\n", c.text(s))
	}
	b.WriteString("  </constraints>\n  <acceptance_criteria>\n")
	for _, cr := range c.crit {
		if cr.Check != "" {
			fmt.Fprintf(&b, "    <criterion check=\"%s\">%s</criterion>\n", c.text(cr.Check), c.text(cr.Text))
		} else {
			fmt.Fprintf(&b, "    <criterion>%s</criterion>\n", c.text(cr.Text))
		}
	}
	b.WriteString("  </acceptance_criteria>\n")
	if len(c.parents) > 0 {
		b.WriteString("  <parents>\n")
		for _, p := range c.parents {
			fmt.Fprintf(&b, "    <parent id=\"%s\" name=\"%s\" status=\"%s\" />\n", c.text(p.ID), c.text(p.Name), c.text(string(p.Status)))
		}
		b.WriteString("  </parents>\n")
	}
	b.WriteString("  <related_files>\n")
	for _, f := range c.files {
		fmt.Fprintf(&b, "    <file path=\"%s\" />\n", c.text(f))
	}
	b.WriteString("  </related_files>\n  <recent_changes>\n")
	for _, ch := range c.changes {
		fmt.Fprintf(&b, "    <change time=\"%s\" event=\"%s\" path=\"%s\" process=\"%s\" />\n", c.text(ch.time), c.text(ch.event), c.text(ch.path), c.text(ch.process))
	}
	b.WriteString("  </recent_changes>\n  <related_specs>\n")
	for _, s := range c.specs {
		fmt.Fprintf(&b, "    <spec_excerpt type=\"%s\" ref=\"%s\">%s</spec_excerpt>\n", c.text(s.typ), c.text(s.ref), c.text(s.text))
	}
	b.WriteString("  </related_specs>\n</intent_context>\n")
	return b.Bytes()
}
