package webui

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/sockowner"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// fakeBackend stands in for the daemon: one mount with one held change,
// and a record of every decision it was asked to make.
type fakeBackend struct {
	mu        sync.Mutex
	decisions []control.DecideRequest
	pending   []control.Pending
	diff      []history.FileDiff
	events    []control.Event
	// mounts are the mounts listed, fakeMount alone when empty.
	mounts []Mount
	// live, if set, carries events sent after the first ones.
	live chan control.Event
}

var fakeMount = Mount{Mountpoint: "/ws", Source: "/src", Socket: "/nonexistent"}

func (f *fakeBackend) Mounts() ([]Mount, error) {
	if len(f.mounts) > 0 {
		return f.mounts, nil
	}
	return []Mount{fakeMount}, nil
}

func (f *fakeBackend) Call(_ context.Context, _ Mount, req control.Request) (*control.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch req.Op {
	case "status":
		return &control.Response{OK: true, Status: &control.Status{Mountpoint: "/ws", Enforcement: "observe", WorkspaceEnforcement: "enforce",
			IntentEnforcement: []control.IntentEnforcement{{ID: "INT-009", Status: "IN_PROGRESS", Enforcement: "observe"}, {ID: "INT-010", Status: "IN_PROGRESS", Enforcement: "enforce"}},
			Counters:          control.Counters{WouldDeny: 7}}}, nil
	case "approvals":
		return &control.Response{OK: true, Pending: f.pending}, nil
	case "decide":
		f.decisions = append(f.decisions, *req.Decide)
		return &control.Response{OK: true, Decisions: []control.Decision{{Pending: control.Pending{ID: req.Decide.ID}, Verdict: req.Decide.Verdict}}}, nil
	}
	return nil, errors.New("unexpected request " + req.Op)
}

func (f *fakeBackend) Watch(ctx context.Context, _ Mount, fn func(control.Event) error) error {
	for _, ev := range f.events {
		if err := fn(ev); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-f.live:
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
}

func (f *fakeBackend) IntentDiff(Mount, string) ([]history.FileDiff, error) { return f.diff, nil }
func (f *fakeBackend) Blame(Mount, string) ([]history.BlameLine, error)     { return nil, nil }
func (f *fakeBackend) Verify(Mount) *ledger.Report                          { return &ledger.Report{Records: 3} }
func (f *fakeBackend) Intents(Mount) ([]*policy.Intent, error) {
	return []*policy.Intent{{ID: "INT-001", Name: "<b>x</b>", Status: "IN_PROGRESS"}}, nil
}

func (f *fakeBackend) decided() []control.DecideRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]control.DecideRequest(nil), f.decisions...)
}

// page is a test server with the real auth in front of the real pages.
type page struct {
	srv  *httptest.Server
	auth *auth
	b    *fakeBackend
}

func newPage(t *testing.T, b *fakeBackend) *page {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	addr := srv.Listener.Addr().(*net.TCPAddr)
	token, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	a := newAuth(token, "test", []string{addr.String()}, false)
	srv.Config.Handler = a.wrap(newPages(b, a, nil))
	srv.Start()
	t.Cleanup(srv.Close)
	return &page{srv: srv, auth: a, b: b}
}

// do sends a request without following redirects.
func (p *page) do(t *testing.T, method, path string, body url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	req, err := http.NewRequest(method, p.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (p *page) cookie() string { return p.auth.cookie + "=" + p.auth.token }

func heldChange() []control.Pending {
	return []control.Pending{{ID: 3, Kind: control.PendingHold, Op: "unlink", Path: "victim.txt", Rule: "hold-deletes", Why: "held",
		Since: time.Now(), Deadline: time.Now().Add(time.Minute)}}
}

// TestAttacksCannotDecide is every way a request without the human's
// authority might try to approve a held change: each is refused, and the
// daemon is never asked.
func TestAttacksCannotDecide(t *testing.T) {
	p := newPage(t, &fakeBackend{pending: heldChange()})
	origin := p.srv.URL
	approve := url.Values{"m": {"/ws"}, "id": {"3"}, "decision": {"approve"}}
	withCSRF := url.Values{"m": {"/ws"}, "id": {"3"}, "decision": {"approve"}, "csrf": {p.auth.csrf}}
	guess := strings.Repeat("0", 64)
	cases := []struct {
		name   string
		method string
		path   string
		body   url.Values
		hdr    map[string]string
		want   int
	}{
		{"no token at all", "POST", "/decide", withCSRF, map[string]string{"Origin": origin}, http.StatusUnauthorized},
		{"a guessed cookie", "POST", "/decide", withCSRF, map[string]string{"Cookie": p.auth.cookie + "=" + guess, "Origin": origin}, http.StatusUnauthorized},
		{"a guessed token in the URL", "GET", "/?token=" + guess, nil, nil, http.StatusForbidden},
		{"the token in the URL of a POST", "POST", "/decide?token=" + p.auth.token, withCSRF, map[string]string{"Origin": origin}, http.StatusForbidden},
		{"the cookie without the CSRF token", "POST", "/decide", approve, map[string]string{"Cookie": p.cookie(), "Origin": origin}, http.StatusForbidden},
		{"the cookie with a wrong CSRF token", "POST", "/decide", approve, map[string]string{"Cookie": p.cookie(), "Origin": origin, csrfHeader: guess}, http.StatusForbidden},
		{"a cross-origin POST", "POST", "/decide", withCSRF, map[string]string{"Cookie": p.cookie(), "Origin": "http://evil.example"}, http.StatusForbidden},
		{"a POST from another port of localhost", "POST", "/decide", withCSRF, map[string]string{"Cookie": p.cookie(), "Origin": "http://127.0.0.1:1"}, http.StatusForbidden},
		{"a same-site but cross-origin fetch", "POST", "/decide", withCSRF, map[string]string{"Cookie": p.cookie(), "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"a wrong Host (DNS rebinding)", "POST", "/decide", withCSRF, map[string]string{"Cookie": p.cookie(), "Host": "evil.example:80", "Origin": "http://evil.example:80"}, http.StatusMisdirectedRequest},
		{"a GET that tries to approve", "GET", "/decide?m=/ws&id=3&decision=approve&csrf=" + p.auth.csrf, nil, map[string]string{"Cookie": p.cookie()}, http.StatusMethodNotAllowed},
		{"a GET of the page through a rebound name", "GET", "/", nil, map[string]string{"Cookie": p.cookie(), "Host": "attacker.test"}, http.StatusMisdirectedRequest},
		{"the event stream without a token", "GET", "/events?m=/ws", nil, nil, http.StatusUnauthorized},
		{"another port's page loading a part of this one", "GET", "/verify?m=/ws", nil, map[string]string{"Cookie": p.cookie(), "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}, http.StatusForbidden},
		{"another port's page fetching the waiting list", "GET", "/approvals?m=/ws", nil, map[string]string{"Cookie": p.cookie(), "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, http.StatusForbidden},
		{"another site's form navigating to decide", "POST", "/decide", withCSRF, map[string]string{"Cookie": p.cookie(), "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := p.do(t, c.method, c.path, c.body, c.hdr)
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			if resp.Header.Get("Set-Cookie") != "" {
				t.Fatalf("a refused request got a cookie")
			}
			if strings.Contains(body, p.auth.token) || strings.Contains(body, p.auth.csrf) {
				t.Fatalf("a refused request was shown a secret: %s", body)
			}
		})
	}
	if d := p.b.decided(); len(d) != 0 {
		t.Fatalf("the daemon was asked to decide: %+v", d)
	}
}

// TestHumanDecides is the page's own request: cookie, CSRF token, same
// origin. Each button maps to the decision `intentfs approve/deny` makes.
func TestHumanDecides(t *testing.T) {
	cases := []struct {
		action  string
		verdict string
		cover   time.Duration
	}{
		{"approve", control.VerdictApproved, 0},
		{"approve-60s", control.VerdictApproved, 60 * time.Second},
		{"deny", control.VerdictDenied, approvals.DefaultDenyCover},
		{"deny-one", control.VerdictDenied, 0},
	}
	for _, c := range cases {
		t.Run(c.action, func(t *testing.T) {
			p := newPage(t, &fakeBackend{pending: heldChange()})
			resp, body := p.do(t, "POST", "/decide", url.Values{"m": {"/ws"}, "id": {"3"}, "decision": {c.action}},
				map[string]string{"Cookie": p.cookie(), "Origin": p.srv.URL, csrfHeader: p.auth.csrf, "Sec-Fetch-Site": "same-origin"})
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"ok":true`) {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			d := p.b.decided()
			if len(d) != 1 || d[0].ID != 3 || d[0].Verdict != c.verdict || d[0].For != c.cover {
				t.Fatalf("decisions %+v", d)
			}
		})
	}
	// A form posted without script carries the CSRF token as a field and
	// is sent back to the page.
	p := newPage(t, &fakeBackend{pending: heldChange()})
	resp, _ := p.do(t, "POST", "/decide", url.Values{"m": {"/ws"}, "id": {"3"}, "decision": {"deny"}, "csrf": {p.auth.csrf}},
		map[string]string{"Cookie": p.cookie(), "Origin": p.srv.URL})
	if resp.StatusCode != http.StatusSeeOther || len(p.b.decided()) != 1 {
		t.Fatalf("form post: status %d, decisions %+v", resp.StatusCode, p.b.decided())
	}
}

// TestLoginDropsToken: the first visit trades the token for a cookie
// that scripts cannot read and other sites' requests do not carry, and
// the address without the token replaces it.
func TestLoginDropsToken(t *testing.T) {
	p := newPage(t, &fakeBackend{})
	resp, _ := p.do(t, "GET", "/?m=%2Fws&token="+p.auth.token, nil, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if loc := resp.Header.Get("Location"); strings.Contains(loc, p.auth.token) || loc != "/?m=%2Fws" {
		t.Fatalf("redirected to %q", loc)
	}
	sc := resp.Header.Get("Set-Cookie")
	for _, want := range []string{p.auth.cookie + "=" + p.auth.token, "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(sc, want) {
			t.Fatalf("cookie %q lacks %q", sc, want)
		}
	}
	if rp := resp.Header.Get("Referrer-Policy"); rp != "no-referrer" {
		t.Fatalf("Referrer-Policy %q", rp)
	}
	resp, body := p.do(t, "GET", "/", nil, map[string]string{"Cookie": p.cookie()})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "would deny") || !strings.Contains(body, ">7 change(s)") ||
		!strings.Contains(body, `<dd id="intent-enforcement">workspace default enforce; INT-009 observe; INT-010 enforce</dd>`) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if strings.Contains(body, p.auth.token) {
		t.Fatal("the page shows the token")
	}
	// A link from elsewhere still opens the page.
	resp, _ = p.do(t, "GET", "/", nil, map[string]string{"Cookie": p.cookie(), "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a navigation from another site: %d", resp.StatusCode)
	}
}

// TestAgentShapedTextIsEscaped: names and file content an agent wrote
// are shown as text, never as markup, and control or bidi characters
// are shown escaped.
func TestAgentShapedTextIsEscaped(t *testing.T) {
	evil := "<script>alert(1)</script>\u202egnp.exe"
	b := &fakeBackend{pending: []control.Pending{{ID: 4, Op: "unlink", Path: evil, Why: "<img src=x onerror=alert(2)>", Since: time.Now()}},
		diff: []history.FileDiff{{Path: evil, Diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+<iframe src=//evil></iframe>\x1b[2J\n"}}}
	p := newPage(t, b)
	for _, path := range []string{"/", "/approvals?m=%2Fws", "/diff?m=%2Fws&intent=INT-001"} {
		_, body := p.do(t, "GET", path, nil, map[string]string{"Cookie": p.cookie()})
		for _, bad := range []string{"<script>alert", "<img src=x", "<iframe", "\u202e", "\x1b", "<b>x</b>"} {
			if strings.Contains(body, bad) {
				t.Fatalf("%s shows %q unescaped:\n%s", path, bad, body)
			}
		}
	}
	_, body := p.do(t, "GET", "/diff?m=%2Fws&intent=INT-001", nil, map[string]string{"Cookie": p.cookie()})
	if !strings.Contains(body, `&lt;iframe src=//evil&gt;&lt;/iframe&gt;\x1b[2J`) || !strings.Contains(body, `\u202e`) {
		t.Fatalf("diff not shown escaped:\n%s", body)
	}
}

// TestEventStream: the daemon's events reach the page as server-sent
// events, with agent-shaped text escaped and the waiting list as ids.
func TestEventStream(t *testing.T) {
	b := &fakeBackend{events: []control.Event{
		{Kind: control.EventHeld, Op: "unlink", Path: "a\u202eb", ID: 9, Time: time.Now()},
		{Kind: control.EventPending, Pending: []control.Pending{{ID: 9, Path: "<secret-looking>"}}},
	}}
	p := newPage(t, b)
	req, _ := http.NewRequest("GET", p.srv.URL+"/events?m=%2Fws", nil)
	req.Header.Set("Cookie", p.cookie())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var data []string
	for len(data) < 2 && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) != 2 || !strings.Contains(data[0], `"kind":"held"`) || !strings.Contains(data[0], `a\\u202eb`) || !strings.Contains(data[0], `"id":9`) {
		t.Fatalf("events %q", data)
	}
	if !strings.Contains(data[1], `"pending":[9]`) || strings.Contains(data[1], "secret-looking") {
		t.Fatalf("pending event %q", data[1])
	}
}

// TestPeerListener: a loopback connection is accepted only when the
// kernel says its socket belongs to an allowed uid.
func TestPeerListener(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		allowSelf bool
	}{{"127.0.0.1:0", true}, {"127.0.0.1:0", false}, {"[::1]:0", true}, {"[::1]:0", false}} {
		allowSelf := tc.allowSelf
		ln, err := net.Listen("tcp", tc.addr)
		if err != nil {
			t.Logf("%s: %v (no loopback of that family here)", tc.addr, err)
			continue
		}
		allowed := map[uint32]bool{}
		if allowSelf {
			allowed[uint32(os.Geteuid())] = true
		} else {
			allowed[uint32(os.Geteuid())+1] = true
		}
		pl := &peerListener{Listener: ln, allowed: allowed, lookup: sockowner.PeerUID, log: discard()}
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := pl.Accept()
			if err == nil {
				accepted <- c
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if allowSelf {
			select {
			case sc := <-accepted:
				sc.Close()
			case <-time.After(5 * time.Second):
				t.Fatal("a connection of our own uid was not accepted")
			}
		} else {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
				t.Fatalf("a connection of another uid was not closed: %v", err)
			}
		}
		c.Close()
		ln.Close()
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "connection reset") }

func TestUnixSocketDir(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := listenUnix(filepath.Join(open, "ui.sock")); err == nil || !strings.Contains(err.Error(), "chmod 0700") {
		t.Fatalf("a socket in a directory others may enter: %v", err)
	}
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(private, "ui.sock")
	ln, err := listenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v", fi.Mode(), err)
	}
	go func() {
		c, err := net.Dial("unix", path)
		if err == nil {
			defer c.Close()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if uid, err := unixPeerUID(c); err != nil || int(uid) != os.Geteuid() {
		t.Fatalf("peer uid %d %v", uid, err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "[::1]:8080": true, "0.0.0.0:0": false, ":8080": false, "192.168.1.2:80": false, "localhost:0": false} {
		if err := loopbackOnly(addr); (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestWorkspacePath(t *testing.T) {
	for in, want := range map[string]string{"src/a.go": "src/a.go", "./x": "x", "a/../b": "b", "/etc/passwd": "", "../x": "", "a/../../x": "", "": "", ".": ""} {
		got, err := workspacePath(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
}

// TestOnlyListedMounts: a request can name only a mount the backend
// lists; any other path (another user's socket, say) is refused before
// anything is sent.
func TestOnlyListedMounts(t *testing.T) {
	p := newPage(t, &fakeBackend{pending: heldChange()})
	resp, _ := p.do(t, "POST", "/decide", url.Values{"m": {"/elsewhere"}, "id": {"3"}, "decision": {"approve"}},
		map[string]string{"Cookie": p.cookie(), "Origin": p.srv.URL, csrfHeader: p.auth.csrf})
	if resp.StatusCode != http.StatusNotFound || len(p.b.decided()) != 0 {
		t.Fatalf("status %d, decisions %+v", resp.StatusCode, p.b.decided())
	}
	for _, path := range []string{"/?m=%2Felsewhere", "/diff?m=%2Felsewhere&intent=INT-001", "/events?m=%2Felsewhere"} {
		resp, body := p.do(t, "GET", path, nil, map[string]string{"Cookie": p.cookie()})
		if !strings.Contains(body, "not a running mount you control") {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

// TestScopeRequestButtons: a scope request is approved or denied, never
// "for 60 s" (that covers a process's further changes, which a request
// has none of).
func TestScopeRequestButtons(t *testing.T) {
	p := newPage(t, &fakeBackend{pending: []control.Pending{{ID: 5, Kind: control.PendingScopeRequest, Paths: []string{"docs/**"}, Intent: "INT-001", Why: "docs too", Since: time.Now()}}})
	_, body := p.do(t, "GET", "/approvals?m=%2Fws", nil, map[string]string{"Cookie": p.cookie()})
	for _, want := range []string{`id="approve-5"`, `id="deny-5"`, "scope request", "docs/**"} {
		if !strings.Contains(body, want) {
			t.Fatalf("no %q in\n%s", want, body)
		}
	}
	if strings.Contains(body, `id="approve60-5"`) {
		t.Fatalf("a scope request offers approve for 60 s:\n%s", body)
	}
}

// TestHeaders: every answer forbids framing and foreign scripts, and the
// static files are served only to the signed-in.
func TestHeaders(t *testing.T) {
	p := newPage(t, &fakeBackend{})
	resp, _ := p.do(t, "GET", "/static/ui.js", nil, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the script without the cookie: %d", resp.StatusCode)
	}
	resp, body := p.do(t, "GET", "/static/ui.js", nil, map[string]string{"Cookie": p.cookie()})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "EventSource") {
		t.Fatalf("the script: %d", resp.StatusCode)
	}
	for h, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q", h, got)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
}

// TestEveryMount: with several mounts (intentfs ui --all) the page links
// each, and shows the one named.
func TestEveryMount(t *testing.T) {
	second := Mount{Mountpoint: "/ws2", Source: "/src2", Socket: "/nonexistent2"}
	p := newPage(t, &fakeBackend{mounts: []Mount{fakeMount, second}})
	_, body := p.do(t, "GET", "/?m=%2Fws2", nil, map[string]string{"Cookie": p.cookie()})
	for _, want := range []string{`<a href="/?m=%2Fws">/ws</a>`, `<a href="/?m=%2Fws2" class="current">/ws2</a>`, "of /src2"} {
		if !strings.Contains(body, want) {
			t.Fatalf("no %q in\n%s", want, body)
		}
	}
}

// TestEventStreamOutlivesReadTimeout: the server's read timeout bounds
// reading a request; a stream that lasts longer keeps going.
func TestEventStreamOutlivesReadTimeout(t *testing.T) {
	b := &fakeBackend{live: make(chan control.Event, 1)}
	srv := httptest.NewUnstartedServer(nil)
	addr := srv.Listener.Addr().(*net.TCPAddr)
	a := newAuth(strings.Repeat("a", 64), "test", []string{addr.String()}, false)
	srv.Config.Handler = a.wrap(newPages(b, a, nil))
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/events?m=%2Fws", nil)
	req.Header.Set("Cookie", a.cookie+"="+a.token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(time.Second) // five read timeouts
	b.live <- control.Event{Kind: control.EventChange, Event: "write", Path: "late.txt", Time: time.Now()}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "late.txt") {
			return
		}
	}
	t.Fatalf("the stream ended before the late event: %v", sc.Err())
}
