package history

import (
	"sort"

	"github.com/intentfs/intentfs/ledger"
)

// unit is what one step of a revert undoes: one record, or the records
// of a file written under a temporary name and renamed into place (sed -i,
// editors, atomic writers: create T, write T, rename T over P), whose net
// change is one change of P.
type unit struct {
	// rec is the record the step answers for: the rename, for a
	// temporary file. A revert records its steps against it.
	rec *ledger.Record
	// temp is the temporary name, if the unit collapses one.
	temp string
	// n is how many records the unit covers.
	n int
	// at orders units as their last records are ordered in the ledger.
	at int
}

// whileTemporary lists what may happen to a temporary file between its
// creation and its rename into place without changing the net result.
func whileTemporary(e ledger.Event) bool {
	switch e {
	case ledger.EventWrite, ledger.EventTruncate, ledger.EventChmod, ledger.EventChown, ledger.EventUtimes, ledger.EventXattr:
		return true
	}
	return false
}

// groupUnits collapses each file created and then renamed away within
// recs (oldest first) into one unit, and leaves every other record a unit
// of its own; the units come back in ledger order.
func groupUnits(recs []*ledger.Record) []unit {
	var out []unit
	// open holds, per path created in recs, the records since its
	// creation while they are all ones a temporary file may see.
	open := map[string][]int{}
	flush := func(path string) {
		for _, i := range open[path] {
			out = append(out, unit{rec: recs[i], n: 1, at: i})
		}
		delete(open, path)
	}
	for i, r := range recs {
		g := r.Gov()
		p := r.Path()
		switch {
		case g.Event == ledger.EventRename && g.FromPath != "" && open[g.FromPath] != nil:
			out = append(out, unit{rec: r, temp: g.FromPath, n: len(open[g.FromPath]) + 1, at: i})
			delete(open, g.FromPath)
			flush(p) // what was replaced is not the same file any more
		case g.Event == ledger.EventCreate:
			flush(p)
			open[p] = []int{i}
		case open[p] != nil && whileTemporary(g.Event):
			open[p] = append(open[p], i)
		default:
			flush(p)
			if g.FromPath != "" {
				flush(g.FromPath)
			}
			out = append(out, unit{rec: r, n: 1, at: i})
		}
	}
	for p := range open {
		flush(p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	return absorbEarlyMetadata(out)
}

// absorbEarlyMetadata folds into a collapsed unit the metadata changes of
// its temporary file that the ledger holds before the file's create: the
// create is recorded when the file is closed, and a tool sets modes and
// xattrs (sed -i copies them from the original) before that.
func absorbEarlyMetadata(units []unit) []unit {
	trailing := map[string][]int{} // per path, its metadata-only units since its last other one
	drop := map[int]bool{}
	for i, u := range units {
		p, e := u.rec.Path(), u.rec.Gov().Event
		switch {
		case u.temp != "":
			for _, j := range trailing[u.temp] {
				drop[j] = true
				units[i].n++
			}
			delete(trailing, u.temp)
		case !undoable(e) && whileTemporary(e):
			trailing[p] = append(trailing[p], i)
		default:
			delete(trailing, p)
		}
	}
	out := units[:0]
	for i, u := range units {
		if !drop[i] {
			out = append(out, u)
		}
	}
	return out
}

// singleUnits makes each record a unit of its own (a revert of one
// record undoes exactly that record).
func singleUnits(recs []*ledger.Record) []unit {
	out := make([]unit, len(recs))
	for i, r := range recs {
		out[i] = unit{rec: r, n: 1, at: i}
	}
	return out
}

// undoable reports whether a revert changes anything for the event;
// metadata changes are recorded without their old values and skipped.
func undoable(e ledger.Event) bool {
	switch e {
	case ledger.EventCreate, ledger.EventWrite, ledger.EventTruncate, ledger.EventDelete, ledger.EventRename,
		ledger.EventMkdir, ledger.EventRmdir, ledger.EventSymlink, ledger.EventLink, ledger.EventMknod:
		return true
	}
	return false
}
