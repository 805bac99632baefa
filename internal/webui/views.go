package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Everything an agent can shape (names, reasons, file content) goes
// through textsafe before html/template escapes it for HTML: the template
// keeps it from being markup, textsafe keeps control and bidi characters
// from forging what the human reads.
var funcs = template.FuncMap{
	"safe":     textsafe.Escape,
	"content":  contentLine,
	"clock":    func(t time.Time) string { return t.Local().Format("15:04:05") },
	"date":     func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"since":    func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
	"until":    func(t time.Time) string { return max(time.Until(t), 0).Round(time.Second).String() },
	"mountURL": mountURL,
	"join":     func(s []string) string { return textsafe.Escape(strings.Join(s, " ")) },
	"isScope":  func(p control.Pending) bool { return p.Kind == control.PendingScopeRequest },
	"lineKind": diffLineKind,
	"lines":    func(s string) []string { return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") },
}

// contentLine shows a line of a file: tabs stay tabs, everything else
// that could forge text is escaped.
func contentLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	parts := strings.Split(s, "\t")
	for i, p := range parts {
		parts[i] = textsafe.Escape(p)
	}
	return strings.Join(parts, "\t")
}

func diffLineKind(line string) string {
	switch {
	case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		return "file"
	case strings.HasPrefix(line, "@@"):
		return "hunk"
	case strings.HasPrefix(line, "+"):
		return "add"
	case strings.HasPrefix(line, "-"):
		return "del"
	}
	return "ctx"
}

// indexData is what the main page shows of one mount.
type indexData struct {
	CSRF      string
	Mounts    []Mount
	Mount     Mount
	Status    *control.Status
	StatusErr string
	Pending   []control.Pending
	Decisions []control.Decision
	// ApprovalsErr says why the approvals could not be read.
	ApprovalsErr string
	Intents      []*policy.Intent
	IntentsErr   string
	Err          string
}

func (p *pages) load(r *http.Request, withStatus bool) (indexData, error) {
	m, all, err := p.mount(r)
	d := indexData{CSRF: p.auth.csrf, Mounts: all, Mount: m}
	if err != nil {
		return d, err
	}
	if withStatus {
		if resp, err := p.call(r, m, control.Request{Op: "status"}); err != nil {
			d.StatusErr = err.Error()
		} else {
			d.Status = resp.Status
		}
		if in, err := p.b.Intents(m); err != nil {
			d.IntentsErr = err.Error()
		} else {
			d.Intents = in
		}
	}
	if resp, err := p.call(r, m, control.Request{Op: "approvals"}); err != nil {
		d.ApprovalsErr = err.Error()
	} else {
		d.Pending, d.Decisions = resp.Pending, resp.Decisions
	}
	return d, nil
}

func (p *pages) index(w http.ResponseWriter, r *http.Request) {
	d, err := p.load(r, true)
	if err != nil {
		d.Err = err.Error()
	}
	p.render(w, "index.html", d)
}

// approvals is the waiting list alone, which the page's script reloads
// when something is held or decided.
func (p *pages) approvals(w http.ResponseWriter, r *http.Request) {
	d, err := p.load(r, false)
	if err != nil {
		p.fail(w, http.StatusNotFound, err)
		return
	}
	p.render(w, "approvals", d)
}

// panels are the status and the sessions alone, which the page's script
// reloads as changes come in.
func (p *pages) panels(w http.ResponseWriter, r *http.Request) {
	d, err := p.load(r, true)
	if err != nil {
		p.fail(w, http.StatusNotFound, err)
		return
	}
	p.render(w, "panels", d)
}

// decisions the page offers, by the value of the button pressed.
func decisionFor(action string) (control.DecideRequest, bool) {
	switch action {
	case "approve":
		return control.DecideRequest{Verdict: control.VerdictApproved}, true
	case "approve-60s":
		return control.DecideRequest{Verdict: control.VerdictApproved, For: 60 * time.Second}, true
	case "deny":
		// As `intentfs deny` does: the rest of the burst is refused too.
		return control.DecideRequest{Verdict: control.VerdictDenied, For: approvals.DefaultDenyCover}, true
	case "deny-one":
		return control.DecideRequest{Verdict: control.VerdictDenied}, true
	}
	return control.DecideRequest{}, false
}

// decide approves or denies a pending entry through the control socket.
// The page's script gets JSON; a form posted without script is sent back
// to the page.
func (p *pages) decide(w http.ResponseWriter, r *http.Request) {
	m, _, err := p.mount(r)
	if err != nil {
		p.fail(w, http.StatusNotFound, err)
		return
	}
	req, ok := decisionFor(r.PostFormValue("decision"))
	id, perr := strconv.ParseUint(r.PostFormValue("id"), 10, 64)
	if !ok || perr != nil || id == 0 {
		p.fail(w, http.StatusBadRequest, fmt.Errorf("a decision needs a pending id and one of approve, approve-60s, deny, deny-one"))
		return
	}
	req.ID = id
	req.Reason = strings.TrimSpace(r.PostFormValue("reason"))
	resp, err := p.call(r, m, control.Request{Op: "decide", Decide: &req})
	scripted := r.Header.Get(csrfHeader) != ""
	if err != nil {
		if scripted {
			writeJSON(w, http.StatusConflict, map[string]any{"ok": false, "error": textsafe.Escape(err.Error())})
			return
		}
		p.fail(w, http.StatusConflict, err)
		return
	}
	p.log.Info("ui: decided", "id", id, "verdict", req.Verdict, "for", req.For, "mount", m.Mountpoint)
	if scripted {
		var said []string
		for _, d := range resp.Decisions {
			said = append(said, fmt.Sprintf("%d %s", d.Pending.ID, d.Verdict))
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "decided": said})
		return
	}
	http.Redirect(w, r, mountURL("/", m), http.StatusSeeOther)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// maxDiffBytes bounds the diff text a page shows; maxBlameLines the
// lines of a blame.
const (
	maxDiffBytes  = 2 << 20
	maxBlameLines = 20000
)

type diffData struct {
	CSRF      string
	Mount     Mount
	Intent    string
	Files     []history.FileDiff
	Truncated int
	Err       string
}

func (p *pages) diff(w http.ResponseWriter, r *http.Request) {
	m, _, err := p.mount(r)
	if err != nil {
		p.fail(w, http.StatusNotFound, err)
		return
	}
	intent := strings.TrimSpace(r.FormValue("intent"))
	d := diffData{CSRF: p.auth.csrf, Mount: m, Intent: intent}
	if intent == "" {
		d.Err = "name an intent"
	} else if files, err := p.b.IntentDiff(m, intent); err != nil {
		d.Err = err.Error()
	} else {
		total := 0
		for i, f := range files {
			total += len(f.Diff)
			if total > maxDiffBytes {
				d.Truncated = len(files) - i
				break
			}
			d.Files = append(d.Files, f)
		}
		if len(files) == 0 {
			d.Err = "no recorded changes under " + intent
		}
	}
	p.render(w, "diff.html", d)
}

type blameData struct {
	CSRF      string
	Mount     Mount
	Path      string
	Lines     []history.BlameLine
	Truncated int
	Err       string
}

func (p *pages) blame(w http.ResponseWriter, r *http.Request) {
	m, _, err := p.mount(r)
	if err != nil {
		p.fail(w, http.StatusNotFound, err)
		return
	}
	d := blameData{CSRF: p.auth.csrf, Mount: m, Path: r.FormValue("path")}
	lines, err := p.b.Blame(m, d.Path)
	if err != nil {
		d.Err = err.Error()
	}
	if len(lines) > maxBlameLines {
		d.Truncated = len(lines) - maxBlameLines
		lines = lines[:maxBlameLines]
	}
	d.Lines = lines
	p.render(w, "blame.html", d)
}

type verifyData struct {
	CSRF   string
	Mount  Mount
	Report *ledger.Report
	Err    string
}

func (p *pages) verify(w http.ResponseWriter, r *http.Request) {
	m, _, err := p.mount(r)
	if err != nil {
		p.fail(w, http.StatusNotFound, err)
		return
	}
	d := verifyData{CSRF: p.auth.csrf, Mount: m}
	if !p.verifying.TryLock() {
		d.Err = "a verify is already running; reload in a moment"
	} else {
		d.Report = p.b.Verify(m)
		p.verifying.Unlock()
	}
	p.render(w, "verify.html", d)
}

// streamEvent is an event as the page's script receives it: every text
// an agent can shape escaped, and for the once-a-second list of what
// waits, only the ids (the script reloads the list when they change).
type streamEvent struct {
	Seq     uint64   `json:"seq,omitempty"`
	Time    string   `json:"time"`
	Kind    string   `json:"kind"`
	Event   string   `json:"event,omitempty"`
	Op      string   `json:"op,omitempty"`
	Path    string   `json:"path,omitempty"`
	Path2   string   `json:"path2,omitempty"`
	Intent  string   `json:"intent,omitempty"`
	Session string   `json:"session,omitempty"`
	Code    string   `json:"code,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Pid     uint32   `json:"pid,omitempty"`
	Uid     uint32   `json:"uid"`
	Comm    string   `json:"comm,omitempty"`
	ID      uint64   `json:"id,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	By      string   `json:"by,omitempty"`
	Dropped uint64   `json:"dropped,omitempty"`
	Pending []uint64 `json:"pending,omitempty"`
}

func toStream(ev control.Event) streamEvent {
	e := textsafe.Escape
	s := streamEvent{Seq: ev.Seq, Time: ev.Time.Local().Format("15:04:05"), Kind: e(ev.Kind), Event: e(ev.Event), Op: e(ev.Op),
		Path: e(ev.Path), Path2: e(ev.Path2), Intent: e(ev.Intent), Session: e(ev.Session), Code: e(ev.Code), Reason: e(ev.Reason),
		Pid: ev.Pid, Uid: ev.Uid, Comm: e(ev.Comm), ID: ev.ID, Verdict: e(ev.Verdict), By: e(ev.By), Dropped: ev.Dropped}
	for _, p := range ev.Pending {
		s.Pending = append(s.Pending, p.ID)
	}
	return s
}

// events streams the mount's feed as server-sent events.
func (p *pages) events(w http.ResponseWriter, r *http.Request) {
	m, _, err := p.mount(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	select {
	case p.streams <- struct{}{}:
		defer func() { <-p.streams }()
	default:
		http.Error(w, "too many live views are open; close one", http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	err = p.b.Watch(ctx, m, func(ev control.Event) error {
		b, err := json.Marshal(toStream(ev))
		if err != nil {
			return err
		}
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && ctx.Err() == nil {
		b, _ := json.Marshal(map[string]string{"kind": "gone", "reason": textsafe.Escape(err.Error())})
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
}
