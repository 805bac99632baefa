package ledger

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// KnownEvents lists every event a record may carry, in the order the
// ledger reference (docs/ledger.md) documents them. It returns a new slice each time.
func KnownEvents() []Event {
	return []Event{
		EventCreate, EventWrite, EventTruncate, EventDelete, EventRename,
		EventMkdir, EventRmdir, EventSymlink, EventLink, EventMknod,
		EventChmod, EventChown, EventUtimes, EventXattr,
		EventDenied, EventSelect, EventTransition, EventScope, EventLesson,
		EventRevert, EventCommit, EventHeader, EventTorn, EventLedgerFailed, EventLedgerRecovered,
		EventSessionStart, EventSessionEnd, EventApproval, EventCheckpoint, EventAccept,
	}
}

// Validate rejects a filter that can match nothing because it is
// malformed: an event no record carries, or a path glob that does not
// parse. (A filter that is well-formed but matches no record is fine.)
func (f *Filter) Validate() error {
	known := KnownEvents()
	for _, e := range f.Events {
		if !slices.Contains(known, e) {
			names := make([]string, len(known))
			for i, k := range known {
				names[i] = string(k)
			}
			return fmt.Errorf("unknown event %q (events: %s)", e, strings.Join(names, ", "))
		}
	}
	if f.PathGlob != "" && !doublestar.ValidatePattern(f.PathGlob) {
		return fmt.Errorf("the path glob %q does not parse (an unclosed [ or {? escape a literal one with \\)", f.PathGlob)
	}
	return nil
}
