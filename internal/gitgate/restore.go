package gitgate

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Restores. git's checkouts, resets, merges and stash pops write files
// through the mount; that is not authorship when what git writes already
// existed. A content change is a restore when its bytes equal
//
//   - an earlier version of the same path in the ledger (the version a
//     record made, or the one the ledger first found there), or
//   - the blob at the same path in a commit a branch, a remote-tracking
//     branch, HEAD or one of git's *_HEAD files names, and that was not
//     made in the mount (or was, and passed the commit check).
//
// Content the agent made up is neither: a blob it wrote with
// `git hash-object -w` is in no such commit, and a commit it made in the
// mount counts only once judged. Only writes by the real git binary are
// looked at (the cost is one more read of the file).

const (
	maxVersions     = 1 << 20 // (path, hash) pairs remembered
	maxTrees        = 8       // commit trees kept listed
	maxTreeEntries  = 1 << 19 // entries of one listed tree
	maxRestoreBytes = 256 << 20
	tipsTTL         = 500 * time.Millisecond
	maxHistoryPaths = 4096    // paths whose history is kept listed
	maxHistoryBlobs = 1 << 14 // versions of one path remembered
	maxHistoryBytes = 64 << 20
	beforeIntentfs  = "before intentfs"
)

// versionIndex remembers each content hash the ledger recorded per path,
// with the first record that made it.
type versionIndex struct {
	first map[string]map[string]string
	n     int
}

func newVersionIndex() *versionIndex { return &versionIndex{first: map[string]map[string]string{}} }

func (v *versionIndex) put(p, h, by string) {
	if p == "" || h == "" || v.n >= maxVersions {
		return
	}
	m := v.first[p]
	if m == nil {
		m = map[string]string{}
		v.first[p] = m
	}
	if _, ok := m[h]; !ok {
		m[h] = by
		v.n++
	}
}

func (v *versionIndex) add(r *ledger.Record) {
	g := r.Gov()
	switch g.Event {
	case ledger.EventCreate, ledger.EventWrite, ledger.EventTruncate, ledger.EventRename, ledger.EventDelete, ledger.EventRevert,
		ledger.EventAccept:
	default:
		return
	}
	p := r.Path()
	if g.Event == ledger.EventDelete || g.Event == ledger.EventWrite || g.Event == ledger.EventTruncate || (g.Event == ledger.EventRename && g.PreHash != nil) {
		v.put(p, ledger.Str(g.PreHash), beforeIntentfs)
	}
	if g.Event != ledger.EventDelete {
		by := "record " + r.ID
		if g.RestoredFrom != "" {
			by = g.RestoredFrom
		}
		v.put(p, ledger.Str(g.PostHash), by)
	}
}

func (v *versionIndex) lookup(p, h string) (string, bool) {
	by, ok := v.first[p][h]
	return by, ok
}

// tipCache lists the commits whose trees hold restorable content.
type tipCache struct {
	at   time.Time
	tips []string
	// trees maps a commit to its tree's blobs by path.
	trees map[string]map[string]string
	order []string
	// history maps a path to the versions it had in the commits some
	// tips reach (see Gate.history).
	history map[string]*pathHistory
}

// pathHistory is the versions of one path: blob id to the newest commit
// (of those listed) that holds it, for the tips named by key.
type pathHistory struct {
	key   [32]byte
	blobs map[string]string
}

// Restored says where the content a trusted git process just wrote came
// from, or "" if it is new: see the comment above.
func (g *Gate) Restored(ctx context.Context, rel, postHash string, p *ledger.Process) string {
	since := time.Now()
	if postHash == "" || rel == "" || p == nil || !trustedGit(p.Exe) {
		return ""
	}
	if err := g.ensureIndex(); err != nil {
		return ""
	}
	g.mu.Lock()
	by, ok := g.versions.lookup(rel, postHash)
	g.mu.Unlock()
	if ok {
		return by
	}
	if _, _, inGit := policy.GitDirOf(rel); inGit {
		// No commit's tree holds a path inside a git directory (git
		// never tracks .git): only the ledger's versions can match, and
		// git init and git config write such files.
		return ""
	}
	gitDir, inRepo, ok := g.repoOf(rel)
	if !ok || strings.ContainsAny(inRepo, "\n\x00") {
		return ""
	}
	st := g.repo(ctx, gitDir)
	if st.git == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	return g.fromCommits(ctx, st, rel, inRepo, postHash, since)
}

// fromCommits says which commit holds, at inRepo, the content rel has
// (whose sha256 is postHash): a commit a tip names, or one a tip reaches.
// Content git wrote before since is looked for in tips listed after it
// too, if need be: a merge writes the work tree only once the fetch's
// refs name what it merges, so tips listed after the write name the
// commit it came from, whatever order the requests arrived in.
func (g *Gate) fromCommits(ctx context.Context, st *repoState, rel, inRepo, postHash string, since time.Time) string {
	tips, at := g.tips(ctx, st, false)
	oid := ""
	find := func(tips []string) string {
		if len(tips) == 0 {
			return ""
		}
		if oid == "" {
			var err error
			if oid, err = blobOID(g.cfg.Source, rel, postHash, len(tips[0]) == 64); err != nil {
				return ""
			}
		}
		return g.findIn(ctx, st, tips, inRepo, oid)
	}
	if c := find(tips); c != "" {
		return "commit " + c
	}
	if !at.Before(since) {
		return ""
	}
	fresh, _ := g.tips(ctx, st, true)
	if slices.Equal(fresh, tips) {
		return ""
	}
	if c := find(fresh); c != "" {
		return "commit " + c
	}
	return ""
}

// findIn returns a commit that tips reach whose tree has blob oid at
// inRepo: one of the first tips (their trees are listed once and kept,
// for the many files of a checkout), or any commit of the path's
// history.
func (g *Gate) findIn(ctx context.Context, st *repoState, tips []string, inRepo, oid string) string {
	for i, tip := range tips {
		if i == maxTrees {
			break
		}
		if g.tree(ctx, st, tip)[inRepo] == oid {
			return tip
		}
	}
	return g.history(ctx, st, tips, inRepo)[oid]
}

// repoOf finds the repository whose work tree holds rel: the innermost
// one the mount has changed, or the one at the workspace root.
func (g *Gate) repoOf(rel string) (gitDir, inRepo string, ok bool) {
	g.mu.Lock()
	best := ""
	found := false
	for d := range g.repos {
		below := strings.TrimSuffix(d, ".git")
		if strings.HasPrefix(rel, below) && (!found || len(d) > len(best)) {
			best, found = d, true
		}
	}
	g.mu.Unlock()
	if !found {
		var st syscall.Stat_t
		if err := syscall.Lstat(g.cfg.Source+"/.git", &st); g.cfg.WorktreeGitDir == "" && (err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR) {
			return "", "", false
		}
		best = ".git"
	}
	return best, strings.TrimPrefix(rel, strings.TrimSuffix(best, ".git")), true
}

// tips lists the commits named by the repository's branches,
// remote-tracking branches, HEAD and git's *_HEAD files, without those
// made in the mount and not judged.
//
// They are listed at most every tipsTTL, unless force; tips returns when
// they were listed.
func (g *Gate) tips(ctx context.Context, st *repoState, force bool) ([]string, time.Time) {
	g.mu.Lock()
	if c := st.tipCache; c != nil && !force && time.Since(c.at) < tipsTTL {
		g.mu.Unlock()
		return c.tips, c.at
	}
	g.mu.Unlock()
	listed := time.Now()
	var all []string
	seen := map[string]bool{}
	addTip := func(s string) {
		if gitexec.ValidOID(s) && !seen[s] {
			seen[s] = true
			all = append(all, s)
		}
	}
	// HEAD and the *_HEAD files git's merges, cherry-picks, reverts,
	// resets and fetches leave, in one process: rev-list peels each name
	// to its commit, keeps the order given and skips the names that do
	// not exist (most *_HEAD files, and HEAD before the first commit).
	if out, err := st.git.Output(ctx, "rev-list", "--no-walk=unsorted", "--ignore-missing", "--end-of-options",
		"HEAD", "MERGE_HEAD", "ORIG_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "FETCH_HEAD", "AUTO_MERGE"); err == nil {
		for _, l := range strings.Fields(string(out)) {
			addTip(l)
		}
	}
	if out, err := st.git.Output(ctx, "for-each-ref", "--sort=-committerdate", "--count=32", "--format=%(objectname)", "refs/heads", "refs/remotes"); err == nil {
		for _, l := range strings.Fields(string(out)) {
			addTip(l)
		}
	}
	made, err := g.madeHere(st, all)
	if err != nil {
		return nil, listed
	}
	skip := map[string]bool{}
	for _, m := range made {
		skip[m] = true
	}
	var tips []string
	for _, t := range all {
		if !skip[t] {
			tips = append(tips, t)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := st.cache()
	if listed.After(c.at) {
		c.at, c.tips = listed, tips
	}
	return tips, listed
}

// cache returns the repository's tip cache, making it. g.mu is held.
func (st *repoState) cache() *tipCache {
	if st.tipCache == nil {
		st.tipCache = &tipCache{trees: map[string]map[string]string{}, history: map[string]*pathHistory{}}
	}
	return st.tipCache
}

// history returns the versions inRepo had in the commits tips reach:
// blob id to a commit holding it. It is one `git log` of the path, whose
// raw diffs name every version the path took, kept until the tips change:
// `git checkout HEAD~3 -- f` and `git reset --hard HEAD~2` write content
// that no tip's tree holds.
func (g *Gate) history(ctx context.Context, st *repoState, tips []string, inRepo string) map[string]string {
	if len(tips) == 0 {
		return nil
	}
	key := sha256.Sum256([]byte(strings.Join(tips, "\n")))
	g.mu.Lock()
	h := st.cache().history[inRepo]
	g.mu.Unlock()
	if h != nil && h.key == key {
		return h.blobs
	}
	blobs := map[string]string{}
	// --full-history: a side branch's version counts even where a merge
	// kept the other; a merge's own version shows in its diff against the
	// first parent. Renames are not followed: a version counts at the
	// path it was committed at.
	cmd := st.git.Command(ctx, "log", "--full-history", "--diff-merges=first-parent", "--no-renames", "--no-ext-diff", "--no-textconv",
		"--no-color", "--raw", "-z", "--no-abbrev", "--format=%x01%H", "--stdin", "--", ":(top,literal)"+inRepo)
	cmd.Stdin = strings.NewReader(strings.Join(tips, "\n") + "\n")
	out, err := cmd.StdoutPipe()
	if err == nil && cmd.Start() == nil {
		b, _ := io.ReadAll(io.LimitReader(out, maxHistoryBytes))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		parseHistory(b, inRepo, blobs)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := st.cache()
	if len(c.history) >= maxHistoryPaths {
		clear(c.history)
	}
	c.history[inRepo] = &pathHistory{key: key, blobs: blobs}
	return blobs
}

// parseHistory reads `git log --raw -z --format=%x01%H` output: each
// commit's "\x01<id>", then ":<modes> <old> <new> <status>" and the path
// of each change. It keeps the new blob of each change to a regular file
// at inRepo, with the first (newest) commit that has it.
func parseHistory(b []byte, inRepo string, blobs map[string]string) {
	commit := ""
	f := bytes.Split(b, []byte{0})
	for i := 0; i < len(f); i++ {
		tok := bytes.TrimLeft(f[i], "\n")
		switch {
		case len(tok) > 0 && tok[0] == 1:
			commit = string(tok[1:])
		case len(tok) > 0 && tok[0] == ':' && i+1 < len(f):
			i++
			meta := strings.Fields(string(tok[1:]))
			if len(meta) != 5 || string(f[i]) != inRepo || !gitexec.ValidOID(commit) {
				continue
			}
			mode, blob := meta[1], meta[3]
			if !strings.HasPrefix(mode, "100") || gitexec.ZeroOID(blob) || len(blobs) >= maxHistoryBlobs {
				continue
			}
			if _, ok := blobs[blob]; !ok {
				blobs[blob] = commit
			}
		}
	}
}

// tree returns the blobs of a commit's tree by path, listing it once.
func (g *Gate) tree(ctx context.Context, st *repoState, commit string) map[string]string {
	g.mu.Lock()
	t, ok := st.cache().trees[commit]
	g.mu.Unlock()
	if ok {
		return t
	}
	t = map[string]string{}
	cmd := st.git.Command(ctx, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit)
	out, err := cmd.StdoutPipe()
	if err == nil && cmd.Start() == nil {
		b, _ := io.ReadAll(io.LimitReader(out, 64<<20))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, e := range bytes.Split(b, []byte{0}) {
			meta, name, ok := bytes.Cut(e, []byte{'\t'})
			f := strings.Fields(string(meta))
			if !ok || len(f) != 3 || f[1] != "blob" || len(t) >= maxTreeEntries {
				continue
			}
			t[string(name)] = f[2]
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := st.cache()
	if _, ok := c.trees[commit]; ok {
		return c.trees[commit]
	}
	if len(c.order) >= maxTrees {
		delete(c.trees, c.order[0])
		c.order = c.order[1:]
	}
	c.trees[commit] = t
	c.order = append(c.order, commit)
	return t
}

// blobOID reads rel and returns its git blob id, provided its sha256 is
// still want (else it changed since it was recorded).
func blobOID(source, rel, want string, sha256Repo bool) (string, error) {
	rootFd, err := syscall.Open(source, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer syscall.Close(rootFd)
	fd, err := safeio.OpenBeneath(rootFd, rel, syscall.O_RDONLY|syscall.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxRestoreBytes {
		return "", fmt.Errorf("%s: not a regular file within bounds", rel)
	}
	var git hash.Hash = sha1.New()
	if sha256Repo {
		git = sha256.New()
	}
	fmt.Fprintf(git, "blob %d\x00", fi.Size())
	content := sha256.New()
	n, err := io.Copy(io.MultiWriter(git, content), io.LimitReader(f, fi.Size()+1))
	if err != nil || n != fi.Size() {
		return "", fmt.Errorf("%s changed while read", rel)
	}
	if "sha256:"+hex.EncodeToString(content.Sum(nil)) != want {
		return "", fmt.Errorf("%s changed since it was recorded", rel)
	}
	return hex.EncodeToString(git.Sum(nil)), nil
}
