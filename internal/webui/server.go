// Package webui serves intentfs's supervisor page: a local web page that
// shows one mount or every mount the user controls — live events, the
// sessions and their intents, what waits for approval, per-intent diffs,
// blame, verify — and lets the human approve or deny.
//
// Only the human may act. The page listens on loopback (or on a unix
// socket in a private directory) and accepts connections only from the
// user who started it (the kernel names the owner of every connecting
// socket); every request must hold the run's 256-bit token, given once
// in the printed URL and then kept as an HttpOnly, SameSite=Strict
// cookie; every action is a POST that must also carry a CSRF token only
// the page knows and come from the page's own origin and Host. Actions go
// through the daemon's control socket, as the CLI's do.
package webui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/sockowner"
)

//go:embed page static
var assets embed.FS

// Options configure a Server.
type Options struct {
	Backend Backend
	// Listen is the loopback address to listen on (127.0.0.1:0 picks a
	// port); Socket, if set, is a unix socket path to listen on instead.
	Listen string
	Socket string
	// AllowUIDs are users besides the one running the ui whose
	// connections are accepted (the desktop user's, when the ui runs
	// through sudo). Root's are always accepted.
	AllowUIDs []uint32
	Log       *slog.Logger
}

// Server is a running page.
type Server struct {
	http *http.Server
	ln   net.Listener
	auth *auth
	url  string
	// socket is the unix socket's path, removed by Close.
	socket string
}

// Start listens and serves until Close.
func Start(o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	allowed := map[uint32]bool{0: true, uint32(os.Geteuid()): true}
	for _, u := range o.AllowUIDs {
		allowed[u] = true
	}
	var ln net.Listener
	var a *auth
	var pageURL string
	if o.Socket != "" {
		ln, err = listenUnix(o.Socket)
		if err != nil {
			return nil, err
		}
		ln = &peerListener{Listener: ln, allowed: allowed, lookup: unixPeerUID, log: o.Log}
		a = newAuth(token, "sock", nil, true)
		pageURL = "http://localhost/?" + tokenParam + "=" + token
	} else {
		addr := o.Listen
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		if err := loopbackOnly(addr); err != nil {
			return nil, err
		}
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		}
		tcp := ln.Addr().(*net.TCPAddr)
		port := strconv.Itoa(tcp.Port)
		ln = &peerListener{Listener: ln, allowed: allowed, lookup: sockowner.PeerUID, log: o.Log}
		a = newAuth(token, port, []string{tcp.String(), "localhost:" + port}, false)
		pageURL = "http://" + tcp.String() + "/?" + tokenParam + "=" + token
	}
	s := &Server{ln: ln, auth: a, url: pageURL, socket: o.Socket}
	s.http = &http.Server{
		Handler:           a.wrap(newPages(o.Backend, a, o.Log)),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		// The server's own errors would print request details; they go
		// to the debug log, never with the token (no handler logs a URL).
		ErrorLog: slog.NewLogLogger(o.Log.Handler(), slog.LevelDebug),
	}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error("ui: serving stopped", "err", err)
		}
	}()
	return s, nil
}

// URL is the address to open, with the token. Print it to the human;
// never pass it as an argument to another program (/proc/PID/cmdline is
// readable by every user).
func (s *Server) URL() string { return s.url }

// Addr is where the server listens.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server, ending the event streams.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = s.http.Close()
	}
	if s.socket != "" {
		_ = os.Remove(s.socket)
	}
	return err
}

// loopbackOnly refuses an address others on the network could reach.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w (give HOST:PORT, e.g. 127.0.0.1:0)", addr, err)
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: the page listens on a loopback address only (127.0.0.1 or [::1]); to reach it from elsewhere, forward it over ssh", addr)
	}
	return nil
}

// pages are the handlers behind the auth check.
type pages struct {
	b    Backend
	auth *auth
	log  *slog.Logger
	tmpl *template.Template
	// verifying lets one verify run at a time: it reads the whole ledger
	// and tree.
	verifying sync.Mutex
	// streams bounds the live event streams: each holds one of the
	// daemon's few watcher places.
	streams chan struct{}
}

// maxStreams is how many event streams the page serves at once.
const maxStreams = 8

func newPages(b Backend, a *auth, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &pages{b: b, auth: a, log: log, streams: make(chan struct{}, maxStreams)}
	p.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "page/*.html"))
	static, _ := fs.Sub(assets, "static")
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", p.index)
	mux.HandleFunc("GET /approvals", p.approvals)
	mux.HandleFunc("GET /status", p.panels)
	mux.HandleFunc("GET /events", p.events)
	mux.HandleFunc("POST /decide", p.decide)
	mux.HandleFunc("GET /diff", p.diff)
	mux.HandleFunc("GET /blame", p.blame)
	mux.HandleFunc("GET /verify", p.verify)
	return mux
}

// mount finds the mount the request names (?m=MOUNTPOINT), or the first
// one; only mounts the backend lists can be named.
func (p *pages) mount(r *http.Request) (Mount, []Mount, error) {
	all, err := p.b.Mounts()
	if err != nil {
		return Mount{}, nil, err
	}
	if len(all) == 0 {
		return Mount{}, nil, errors.New("no mount you control is running (start one with intentfs mount, then reload)")
	}
	want := r.FormValue("m")
	if want == "" {
		return all[0], all, nil
	}
	for _, m := range all {
		if m.Mountpoint == want {
			return m, all, nil
		}
	}
	return Mount{}, all, fmt.Errorf("%q is not a running mount you control", want)
}

// mountURL is a page's address for mount m.
func mountURL(path string, m Mount, extra ...string) string {
	q := url.Values{"m": {m.Mountpoint}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return path + "?" + q.Encode()
}

func (p *pages) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := p.tmpl.ExecuteTemplate(w, name, data); err != nil {
		p.log.Error("ui: rendering a page", "page", name, "err", err)
	}
}

func (p *pages) fail(w http.ResponseWriter, code int, err error) {
	w.WriteHeader(code)
	p.render(w, "error.html", map[string]any{"Err": err.Error(), "CSRF": p.auth.csrf})
}

// callTimeout bounds one control request made for a page.
const callTimeout = 20 * time.Second

func (p *pages) call(r *http.Request, m Mount, req control.Request) (*control.Response, error) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	return p.b.Call(ctx, m, req)
}
