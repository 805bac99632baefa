package gitcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/internal/upstream"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// DefaultBase is where the default range starts and why.
type DefaultBase struct {
	Revs []string `json:"-"`
	// From says where the base came from, for the output.
	From string `json:"from"`
	// Notes are what was tried before and why it was not used.
	Notes []string `json:"notes,omitempty"`
	// NoUpstream is set when no upstream was found: the range is then
	// all of HEAD's history, commits made before intentfs governed the
	// branch included.
	NoUpstream bool `json:"no_upstream,omitempty"`
	// Advice, set after a failed check of such a range, says which range
	// to give instead.
	Advice string `json:"advice,omitempty"`
}

// AdviseBase fills d.Advice after rep, a check of d's range, failed with
// no upstream to start from: the range held the whole history, and a
// commit made outside any mount (the human's initial commit, typically)
// fails it. It names the range to give instead.
func (d *DefaultBase) AdviseBase(ctx context.Context, repo *gitexec.Repo, rep *Report) {
	if !d.NoUpstream || rep.OK() {
		return
	}
	generic := "no upstream was found, so the range was all of HEAD's history, including commits made before intentfs governed this branch. " +
		"Give the range your review covers: intentfs check <base>..HEAD, with <base> the last commit before the agent's work; " +
		"or give the branch an upstream (git branch --set-upstream-to=origin/main) or declare upstream: {url, ref} in " + policy.IntentsFile
	out, err := repo.Output(ctx, "rev-list", "--max-parents=0", "HEAD")
	if err != nil {
		d.Advice = generic
		return
	}
	failed := map[string]bool{}
	for _, f := range rep.Problems {
		failed[f.Commit] = true
	}
	for _, root := range strings.Fields(string(out)) {
		if failed[root] {
			d.Advice = initialCommitAdvice(ctx, repo, root, "was not made through a mount")
			return
		}
	}
	d.Advice = generic
}

// NoBaseAdvice says which range to give instead of d's, when d has no
// upstream to start from and its range (all of HEAD's history) thus has
// no base to read the rules from: the range after HEAD's initial commit.
func (d *DefaultBase) NoBaseAdvice(ctx context.Context, repo *gitexec.Repo) string {
	out, err := repo.Output(ctx, "rev-list", "--max-parents=0", "HEAD")
	if roots := strings.Fields(string(out)); err == nil && len(roots) == 1 {
		return initialCommitAdvice(ctx, repo, roots[0], "has no commit before it to read the rules from")
	}
	return "no upstream was found, so the range would be all of HEAD's history, which has no base to read the rules from. " +
		"Give the range your review covers: intentfs check <base>..HEAD, with <base> the last commit before the agent's work; " +
		"or give the branch an upstream (git branch --set-upstream-to=origin/main) or declare upstream: {url, ref} in " + policy.IntentsFile
}

// initialCommitAdvice names HEAD's initial commit root, says what is
// wrong with it (why), and gives the range after it.
func initialCommitAdvice(ctx context.Context, repo *gitexec.Repo, root, why string) string {
	subject, _ := repo.Line(ctx, "log", "-1", "--format=%s", root)
	return fmt.Sprintf("no upstream was found, so the range was all of HEAD's history, and its initial commit %s (%q) %s. "+
		"If it is the human's work from before intentfs, check what came after it: intentfs check %s..HEAD (or name the last commit before the agent's work as <base> in intentfs check <base>..HEAD; "+
		"an upstream (git branch --set-upstream-to=origin/main, or upstream: in %s) makes this the default)",
		ledger.ShortHash(root), subject, why, ledger.ShortHash(root), policy.IntentsFile)
}

// DefaultRange is the merge-base with the upstream up to HEAD, or HEAD.
// The upstream is, first, the daemon's mirror of the policy's declared
// upstream (a ref the agent cannot write); else a ref of this clone: the
// declared upstream's remote-tracking branch, or the branch's own
// upstream. Such a ref is written by git fetch, and by anyone who can
// run git in the clone: an agent in the mount can move it to HEAD and
// make the range empty. So where the clone has a ledger of its own (it
// is or was mounted), a base from such a ref is refused, not used; a
// reviewer's fresh clone (its own fetch wrote the refs) uses it, saying
// which ref it was.
func DefaultRange(ctx context.Context, repo *gitexec.Repo, source string, declared *policy.Upstream, hasLedger bool) (*DefaultBase, error) {
	if _, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return nil, fmt.Errorf("the repository has no commits yet")
	}
	d := &DefaultBase{}
	if declared != nil {
		tip, err := mirrorTip(ctx, source)
		switch {
		case err != nil:
			d.Notes = append(d.Notes, err.Error())
		case tip == "":
		case !hasCommit(ctx, repo, tip):
			d.Notes = append(d.Notes, fmt.Sprintf("the daemon's mirror of the declared upstream is at %s, which this clone does not have (fetch the upstream)", ledger.ShortHash(tip)))
		default:
			from := fmt.Sprintf("the daemon's mirror of the declared upstream (%s %s at %s)", textsafe.Escape(declared.URL), textsafe.Escape(declared.Ref), ledger.ShortHash(tip))
			return d.mergeBase(ctx, repo, tip, from), nil
		}
	}
	ref, up := declaredUpstream(ctx, repo, declared)
	if up == "" {
		ref, _ = repo.Line(ctx, "rev-parse", "--symbolic-full-name", "--verify", "--quiet", "@{upstream}")
		if up, _ = repo.Line(ctx, "rev-parse", "--verify", "--quiet", "@{upstream}^{commit}"); up == "" {
			d.Revs, d.From, d.NoUpstream = []string{"HEAD"}, "no upstream: all of HEAD's history", true
			return d, nil
		}
	}
	if hasLedger {
		msg := fmt.Sprintf("the default range would start at the merge-base with %s, a ref an agent in the mount can write (moved to HEAD, it makes the range empty); give the range: intentfs check <base>..HEAD, with the commit the review is against as <base>, or declare upstream: {url, ref} in %s so that check takes the base from the daemon's mirror",
			textsafe.Escape(ref), policy.IntentsFile)
		for _, n := range d.Notes {
			msg += "\n  (" + textsafe.Escape(n) + ")"
		}
		return nil, errors.New(msg)
	}
	return d.mergeBase(ctx, repo, up, "the merge-base with "+textsafe.Escape(ref)+" (this clone has no ledger: its own fetch wrote that ref)"), nil
}

// mergeBase sets d's range to the merge-base of HEAD and up up to HEAD
// (all of HEAD when they share no history).
func (d *DefaultBase) mergeBase(ctx context.Context, repo *gitexec.Repo, up, from string) *DefaultBase {
	base, err := repo.Line(ctx, "merge-base", "HEAD", up)
	if err != nil || base == "" {
		d.Revs, d.From = []string{"HEAD"}, from+": no common history, so all of HEAD's"
		return d
	}
	d.Revs, d.From = []string{base + "..HEAD"}, from
	return d
}

// mirrorTip returns the commit of the daemon's mirror of the declared
// upstream ("" when there is no mirror): a bare repository in the git
// directory that only the daemon writes (upstream.MirrorRel).
func mirrorTip(ctx context.Context, source string) (string, error) {
	path := filepath.Join(source, upstream.MirrorRel)
	if _, err := os.Lstat(filepath.Join(path, "HEAD")); err != nil {
		return "", nil
	}
	repo, err := gitexec.OpenGitDir(path)
	if err != nil {
		return "", fmt.Errorf("opening the upstream mirror: %w", err)
	}
	tip, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", upstream.TrustedRef+"^{commit}")
	if err != nil || !gitexec.ValidOID(tip) {
		return "", fmt.Errorf("the daemon's mirror of the declared upstream has not fetched it yet")
	}
	return tip, nil
}

func hasCommit(ctx context.Context, repo *gitexec.Repo, commit string) bool {
	_, err := repo.Line(ctx, "cat-file", "-e", "--end-of-options", commit+"^{commit}")
	return err == nil
}

// declaredUpstream returns the ref and commit of the policy's declared
// upstream as this clone last fetched it: the remote-tracking branch of
// the remote whose URL is the declared one. "" when there is none.
func declaredUpstream(ctx context.Context, repo *gitexec.Repo, declared *policy.Upstream) (string, string) {
	branch, ok := strings.CutPrefix(declaredRef(declared), "refs/heads/")
	if !ok {
		return "", ""
	}
	out, err := repo.Output(ctx, "config", "--get-regexp", `^remote\..*\.url$`)
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		key, url, ok := strings.Cut(line, " ")
		remote := strings.TrimSuffix(strings.TrimPrefix(key, "remote."), ".url")
		if !ok || !sameURL(url, declared.URL) || strings.HasPrefix(remote, "-") {
			continue
		}
		ref := "refs/remotes/" + remote + "/" + branch
		if c, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}"); err == nil && c != "" {
			return ref, c
		}
	}
	return "", ""
}

func declaredRef(u *policy.Upstream) string {
	if u == nil {
		return ""
	}
	return u.Ref
}

// sameURL compares two remote URLs, a path's trailing slash and a
// file:// prefix aside.
func sameURL(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimPrefix(s, "file://")
		if strings.HasPrefix(s, "/") {
			s = filepath.Clean(s)
		}
		return strings.TrimSuffix(s, "/")
	}
	return norm(a) == norm(b)
}
