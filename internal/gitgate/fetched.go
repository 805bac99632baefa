package gitgate

import (
	"context"
	"regexp"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/ledger"
)

// maxKnownTips bounds the tips the gate adds to its known history while
// the mount runs; past it, older fetched tips are dropped (their commits
// are then judged only by where their objects came from).
const maxKnownTips = 4096

// remoteName is what a configured remote's name may look like on git
// fetch's command line: a path or URL there is not a configured remote.
var remoteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// fetchRemote returns the remote a git fetch process fetches from, if it
// is the real git fetching from a remote the repository's configuration
// names (the configuration is read-only through the mount: a human set
// its URL). Without a remote argument, git fetches from origin (or the
// branch's remote, which is "" here: not trusted).
func fetchRemote(p *ledger.Process) (string, bool) {
	if p == nil || len(p.Cmdline) < 2 || p.Cmdline[1] != "fetch" || !trustedGit(p.Exe) {
		return "", false
	}
	for _, a := range p.Cmdline[2:] {
		if strings.HasPrefix(a, "-") {
			continue // "--", and options (git pull passes theirs with "=")
		}
		return a, remoteName.MatchString(a)
	}
	return "origin", true
}

// noteFetched adds the commit a remote-tracking ref now names to the
// history the gate knows, when git fetch from a configured remote wrote
// it: those commits are the remote's, not the mount's, even after a
// repack (git gc) has put their objects into a pack written in the mount.
func (g *Gate) noteFetched(ctx context.Context, st *repoState, p *ledger.Process, content []byte) {
	remote, ok := fetchRemote(p)
	if !ok {
		return
	}
	v, ok := parseLooseRef(content)
	if !ok || v.oid == "" || !gitexec.ValidOID(v.oid) {
		return
	}
	if !g.configuredRemote(ctx, st, remote) {
		return
	}
	// git fetch also writes a commit it already has without asking the
	// remote (a refspec naming a commit id): a commit made in the mount
	// stays the mount's.
	if made, err := g.madeHere(st, []string{v.oid}); err != nil || len(made) > 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range st.fetchedTips {
		if t == v.oid {
			return
		}
	}
	st.fetchedTips = append(st.fetchedTips, v.oid)
	if n := len(st.fetchedTips); n > maxKnownTips {
		st.fetchedTips = append([]string(nil), st.fetchedTips[n-maxKnownTips:]...)
	}
}

// configuredRemote reports whether the repository's configuration names
// remote with a URL, remembering the answer.
func (g *Gate) configuredRemote(ctx context.Context, st *repoState, remote string) bool {
	g.mu.Lock()
	known, seen := st.remotes[remote]
	g.mu.Unlock()
	if seen {
		return known
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	url, err := st.git.Line(ctx, "config", "--get", "remote."+remote+".url")
	known = err == nil && url != "" && url != "."
	g.mu.Lock()
	st.remotes[remote] = known
	g.mu.Unlock()
	return known
}
