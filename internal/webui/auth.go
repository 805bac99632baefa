package webui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// tokenBytes is the size of the per-run secret: 256 bits.
const tokenBytes = 32

// csrfHeader carries the page's CSRF token on the page's own requests;
// a form without script sends it as the field csrfField.
const (
	csrfHeader = "X-Intentfs-Csrf"
	csrfField  = "csrf"
	tokenParam = "token"
)

// auth holds the run's secrets and decides whether a request carries the
// human's authority.
type auth struct {
	// token is the secret printed once in the URL; the browser keeps it
	// as a cookie.
	token string
	// csrf is derived from the token: a page served to the holder of the
	// cookie embeds it, and no other origin can read it.
	csrf string
	// cookie names the cookie. Cookies are not told apart by port, so
	// the name carries it: two runs on one host do not overwrite each
	// other's.
	cookie string
	// hosts are the Host header values accepted: the address the server
	// listens on, by number and as localhost. Anything else is a request
	// for another name that resolves here (DNS rebinding).
	hosts map[string]bool
	// anyLoopbackPort accepts loopback names on any port: for a unix
	// socket, reached through a forward whose port the server cannot
	// know.
	anyLoopbackPort bool
}

// newToken returns a fresh 256-bit secret, hex encoded.
func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the page's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func newAuth(token, cookieSuffix string, hosts []string, anyLoopbackPort bool) *auth {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("intentfs ui csrf"))
	a := &auth{token: token, csrf: hex.EncodeToString(m.Sum(nil)), cookie: "intentfs_ui_" + cookieSuffix,
		hosts: map[string]bool{}, anyLoopbackPort: anyLoopbackPort}
	for _, h := range hosts {
		a.hosts[strings.ToLower(h)] = true
	}
	return a
}

// equal compares secrets in constant time.
func equal(got, want string) bool {
	return len(got) == len(want) && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// hostOK checks the Host header against the names this server answers to.
func (a *auth) hostOK(host string) bool {
	host = strings.ToLower(host)
	if a.hosts[host] {
		return true
	}
	if !a.anyLoopbackPort {
		return false
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	switch strings.Trim(h, "[]") {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// originOK checks a state-changing request's Origin (and, where the
// browser sends it, Sec-Fetch-Site): it must be this page. A browser
// always sends Origin on a POST; a request without one is not from a
// page, and must then still hold the cookie and the CSRF token.
func (a *auth) originOK(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" || u.Path != "" && u.Path != "/" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// fetchSiteOK applies the browser's fetch metadata: a request another
// page caused (an image, a script, a fetch from another port of
// localhost, which is the same site and so is sent the cookie) is
// refused, except a top-level navigation, which only shows the page to
// the human. Requests without the metadata (not from a browser) pass on
// to the other checks.
func fetchSiteOK(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

// authenticated reports whether the request holds the cookie.
func (a *auth) authenticated(r *http.Request) bool {
	c, err := r.Cookie(a.cookie)
	return err == nil && equal(c.Value, a.token)
}

// csrfOK reports whether a state-changing request carries the CSRF token.
func (a *auth) csrfOK(r *http.Request) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return equal(got, a.csrf)
}

// setCookie gives the browser the token as a cookie no script can read
// and no other site's request carries.
func (a *auth) setCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: a.cookie, Value: a.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// wrap refuses every request without the human's authority:
//   - a Host header other than this server's (DNS rebinding);
//   - no cookie, or a wrong one; the one exception is the first visit,
//     whose URL carries the token: it sets the cookie and redirects to
//     the same page without the token, so it stays out of the history
//     and of any Referer;
//   - a state-changing request that is not a POST, comes from another
//     origin, or lacks the CSRF token.
func (a *auth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if !a.hostOK(r.Host) {
			http.Error(w, "wrong Host: open the address intentfs ui printed", http.StatusMisdirectedRequest)
			return
		}
		if !fetchSiteOK(r) {
			http.Error(w, "refused: another site's page may not load this one's parts", http.StatusForbidden)
			return
		}
		if q := r.URL.Query(); q.Has(tokenParam) {
			if r.Method != http.MethodGet || !equal(q.Get(tokenParam), a.token) {
				http.Error(w, "wrong or expired token: open the address intentfs ui printed", http.StatusForbidden)
				return
			}
			a.setCookie(w)
			q.Del(tokenParam)
			clean := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, clean.String(), http.StatusSeeOther)
			return
		}
		if !a.authenticated(r) {
			http.Error(w, "not signed in: open the address intentfs ui printed (it carries a one-run token)", http.StatusUnauthorized)
			return
		}
		if changesState(r.URL.Path) {
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", http.MethodPost)
				http.Error(w, "this action takes a POST", http.StatusMethodNotAllowed)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !a.originOK(r) || !a.csrfOK(r) {
				http.Error(w, "refused: the request did not come from the intentfs ui page", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// maxFormBytes bounds a form: a decision is a few fields.
const maxFormBytes = 16 << 10

// changesState lists the paths that act.
func changesState(path string) bool { return path == "/decide" }

// securityHeaders keep the page from being framed, from loading anything
// but its own script and style, and from sending its address elsewhere.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
