package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
)

func watchCmd() *command {
	return &command{
		name: "watch", summary: "follow what agents do, live", usage: "[--json]",
		help: `Shows what happens in a mount as it happens. On a terminal: a screen
that keeps itself current, with what waits for a human at the top (approve
or deny by id from another terminal), the counts of allowed, denied and
held changes per session (per uid outside sessions) since the watch began,
and the most recent events, starting with the last ones in the ledger. Otherwise (or with --json): one JSON object per line
for other tools: change, denied, held, decided, governance, and once a
second pending (the list of what waits). A watcher that reads too slowly
never slows the mount; it gets a "dropped" line saying how many events it
missed. Stop with Ctrl-C.

Examples:
  intentfs watch
  intentfs watch --mount /workspace --json | jq -c 'select(.kind=="denied")'`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.Bool("json", false, "print JSON lines even on a terminal")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("watch takes no arguments")
			}
			mnt, _ := a.fs.GetString("mount")
			e, err := findMount(mnt)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var fn func(control.Event) error
			fd, term := terminalOf(a)
			if jsonOut(a) || !term {
				enc := json.NewEncoder(a.stdout)
				fn = func(ev control.Event) error { return enc.Encode(ev) }
			} else {
				s := &watchScreen{a: a, fd: fd, counts: map[string]*watchCounts{}, mountpoint: e.Mountpoint}
				s.prefill(recentRecords(e))
				fn = s.event
				defer fmt.Fprint(a.stdout, "\x1b[?25h\n")
			}
			err = control.Watch(ctx, e.Socket, control.Request{}, fn)
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			return err
		},
	}
}

// terminalOf reports whether the command writes to a terminal, and its fd.
func terminalOf(a *app) (int, bool) {
	f, ok := a.stdout.(*os.File)
	if !ok {
		return -1, false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return int(f.Fd()), err == nil
}

// watchBacklog is how many of the ledger's latest records the screen
// shows before the live events, so it never starts empty.
const watchBacklog = 30

// recentRecords returns the mount's latest ledger records, or none when
// the ledger cannot be read (the screen then shows live events only).
func recentRecords(e mounts.Entry) []*ledger.Record {
	resp, err := call(e, control.Request{Op: "status"})
	if err != nil || resp.Status == nil || resp.Status.LedgerPath == "" {
		return nil
	}
	recs, err := ledger.Tail(resp.Status.LedgerPath, watchBacklog, func(r *ledger.Record) bool { return r.Gov().Event != ledger.EventHeader })
	if err != nil {
		return nil
	}
	return recs
}

// prefill shows recorded events before the live ones; they are not
// counted, the counts are the watch's own.
func (s *watchScreen) prefill(recs []*ledger.Record) {
	for _, r := range recs {
		s.recent = append(s.recent, recordEvent(r))
	}
	if len(s.recent) > watchRecent {
		s.recent = slices.Delete(s.recent, 0, len(s.recent)-watchRecent)
	}
	s.draw()
}

// recordEvent is a ledger record as the screen shows an event.
func recordEvent(r *ledger.Record) control.Event {
	g := r.Gov()
	ev := control.Event{Kind: control.EventChange, Event: string(g.Event), Op: g.Op, Path2: g.FromPath, Intent: ledger.Str(g.IntentID),
		Code: g.Code, Reason: g.Reason}
	switch {
	case g.Event == ledger.EventDenied:
		ev.Kind = control.EventDenied
	case ledger.ClassOf(g.Event) == "":
		ev.Kind = control.EventGovernance
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Timestamp); err == nil {
		ev.Time = t.Local()
	}
	if len(r.Files) > 0 {
		ev.Path = r.Files[0].Path
	}
	if g.Session != nil {
		ev.Session = g.Session.ID
	}
	if p := g.Process; p != nil {
		ev.Pid, ev.Uid, ev.Comm = p.Pid, p.Uid, p.Comm
	}
	return ev
}

// watchRecent bounds the events the screen remembers.
const watchRecent = 200

// watchRedraw is the fastest the screen redraws: a burst of thousands of
// events redraws it a few times, not thousands.
const watchRedraw = 200 * time.Millisecond

type watchCounts struct{ allowed, denied, held uint64 }

// watchScreen is the terminal view.
type watchScreen struct {
	a          *app
	fd         int
	mountpoint string
	pending    []control.Pending
	recent     []control.Event
	counts     map[string]*watchCounts
	dropped    uint64
	drawn      time.Time
}

func (s *watchScreen) event(ev control.Event) error {
	switch ev.Kind {
	case control.EventPending:
		s.pending = ev.Pending
	case control.EventDropped:
		s.dropped += ev.Dropped
	case control.EventHeld:
		s.pending = append(slices.DeleteFunc(s.pending, func(p control.Pending) bool { return p.ID == ev.ID }),
			control.Pending{ID: ev.ID, Op: ev.Op, Path: ev.Path, Intent: ev.Intent, Session: ev.Session, Why: ev.Reason, Since: ev.Time})
		s.count(ev).held++
	case control.EventDecided:
		s.pending = slices.DeleteFunc(s.pending, func(p control.Pending) bool { return p.ID == ev.ID })
	case control.EventChange:
		s.count(ev).allowed++
	case control.EventDenied:
		s.count(ev).denied++
	}
	if ev.Kind != control.EventPending {
		s.recent = append(s.recent, ev)
		if len(s.recent) > watchRecent {
			s.recent = slices.Delete(s.recent, 0, len(s.recent)-watchRecent)
		}
	}
	if time.Since(s.drawn) >= watchRedraw || ev.Kind == control.EventHeld || ev.Kind == control.EventPending {
		s.draw()
	}
	return nil
}

// count returns the counters of the event's session, or of its uid.
func (s *watchScreen) count(ev control.Event) *watchCounts {
	key := "session " + ev.Session
	if ev.Session == "" {
		key = fmt.Sprintf("uid %d", ev.Uid)
	}
	c := s.counts[key]
	if c == nil {
		c = &watchCounts{}
		s.counts[key] = c
	}
	return c
}

func (s *watchScreen) draw() {
	s.drawn = time.Now()
	rows, cols := 24, 80
	if ws, err := unix.IoctlGetWinsize(s.fd, unix.TIOCGWINSZ); err == nil && ws.Row > 0 {
		rows, cols = int(ws.Row), int(ws.Col)
	}
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fit(fmt.Sprintf(format, args...), cols)) }
	add("intentfs watch %s   %s   (Ctrl-C to stop)", textsafe.Escape(s.mountpoint), time.Now().Format("15:04:05"))
	if len(s.pending) == 0 {
		add("nothing waits for a human")
	} else {
		add("WAITING FOR YOU — intentfs approve ID [--for 60s] | intentfs deny ID")
		for _, p := range s.pending {
			what := p.Op + " " + p.Path
			if p.Kind == control.PendingScopeRequest {
				what = "scope request " + strings.Join(p.Paths, " ")
			}
			add("  %4d  %s  intent=%s  %s  waiting %s: %s", p.ID, textsafe.Escape(what), dash(p.Intent), sessionText(p.Session),
				time.Since(p.Since).Round(time.Second), textsafe.Escape(p.Why))
		}
	}
	keys := make([]string, 0, len(s.counts))
	for k := range s.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		c := s.counts[k]
		parts = append(parts, fmt.Sprintf("%s: %d allowed, %d denied, %d held", k, c.allowed, c.denied, c.held))
	}
	add("%s", strings.Join(parts, " | "))
	if s.dropped > 0 {
		add("(%d events were not shown: this screen could not keep up)", s.dropped)
	}
	add("%s", strings.Repeat("-", min(cols, 80)))
	room := rows - len(lines) - 1
	first := max(len(s.recent)-room, 0)
	for _, ev := range s.recent[first:] {
		add("%s", eventLine(ev))
	}
	fmt.Fprint(s.a.stdout, "\x1b[?25l\x1b[H\x1b[2J"+strings.Join(lines, "\n"))
}

func sessionText(s string) string {
	if s == "" {
		return ""
	}
	return "session=" + textsafe.Escape(s)
}

// eventLine is one event on the screen, escaped.
func eventLine(ev control.Event) string {
	who := ""
	if ev.Pid != 0 {
		who = fmt.Sprintf(" pid %d %s", ev.Pid, textsafe.Escape(ev.Comm))
	}
	ts := ev.Time.Format("15:04:05")
	path := textsafe.Escape(ev.Path)
	if ev.Path2 != "" {
		path += " <- " + textsafe.Escape(ev.Path2)
	}
	switch ev.Kind {
	case control.EventChange:
		return fmt.Sprintf("%s  ok      %-8s %s%s", ts, ev.Event, path, who)
	case control.EventDenied:
		return fmt.Sprintf("%s  DENIED  %-8s %s%s: %s", ts, textsafe.Escape(ev.Op), path, who, textsafe.Escape(ev.Reason))
	case control.EventHeld:
		return fmt.Sprintf("%s  HELD    %-8s %s%s as %d: %s", ts, textsafe.Escape(ev.Op), path, who, ev.ID, textsafe.Escape(ev.Reason))
	case control.EventDecided:
		return fmt.Sprintf("%s  %-7s %s", ts, strings.ToUpper(ev.Verdict), textsafe.Escape(ev.Reason))
	case control.EventDropped:
		return fmt.Sprintf("%s  (%d events dropped)", ts, ev.Dropped)
	}
	return fmt.Sprintf("%s  %-7s %-8s %s%s %s", ts, ev.Kind, ev.Event, path, who, textsafe.Escape(ev.Reason))
}

// fit cuts a line to the terminal's width.
func fit(s string, cols int) string {
	r := []rune(s)
	if len(r) > cols {
		return string(r[:max(cols-1, 0)]) + "…"
	}
	return s
}
