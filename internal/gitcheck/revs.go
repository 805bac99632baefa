package gitcheck

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/textsafe"
)

// AmbiguousError is a revision name of a range that names more than one
// ref: git picks one by its own order (refs/X before refs/heads/X), which
// need not be the branch git push publishes, and whoever can write refs
// (an agent in the mount) can add the one git picks.
type AmbiguousError struct {
	Name string
	// Refs are the refs the name could mean, in git's order.
	Refs []string
}

// Error names the refs escaped: a ref name is the writer's choice.
func (e *AmbiguousError) Error() string {
	refs := make([]string, len(e.Refs))
	for i, r := range e.Refs {
		refs[i] = textsafe.Escape(r)
	}
	name := textsafe.Escape(e.Name)
	what := strings.Join(refs, " and ")
	if len(e.Refs) < 2 {
		what = "git finds more than one ref or file by that name"
	}
	if isHex(e.Name) {
		return fmt.Sprintf("%s is ambiguous: a short commit id and %s; give the full commit id", name, what)
	}
	full := advice(e.Name, e.Refs)
	if full == "" {
		return fmt.Sprintf("%s is ambiguous: %s; name it in full (refs/heads/…, refs/tags/…) or by its full commit id", name, what)
	}
	return fmt.Sprintf("%s is ambiguous: %s; name it in full (%s)", name, what, textsafe.Escape(full))
}

// advice is the full ref to suggest for an ambiguous name: the one git
// push <remote> <name> would publish (refs/heads/<name>, else
// refs/tags/<name>), among refs. "" when no such ref is safe to name: a
// name that is already a full ref, nests refs/, or whose last part is an
// object id is one only an agent would make, and naming it would steer
// the reviewer to it.
func advice(name string, refs []string) string {
	if !adviseable(name) {
		return ""
	}
	for _, prefix := range []string{"refs/heads/", "refs/tags/"} {
		for _, r := range refs {
			if r == prefix+name {
				return r
			}
		}
	}
	return ""
}

func adviseable(name string) bool {
	if name == "" || strings.HasPrefix(name, "refs/") || strings.Contains(name, "/refs/") || strings.HasPrefix(name, "heads/refs/") {
		return false
	}
	last := name[strings.LastIndex(name, "/")+1:]
	return !isFullOID(last)
}

// ReflogError is a revision name that reads a reflog (main@{0}, @{1},
// main@{yesterday}, @{-1}, @{upstream}): logs/ is git state the agent
// can write in the mount, so the name says what the agent wrote there,
// not what the branch holds.
type ReflogError struct{ Name string }

func (e *ReflogError) Error() string {
	return fmt.Sprintf("%s reads the reflog, which the agent can write in the mount: name a commit id or a branch", textsafe.Escape(e.Name))
}

// SearchError is a revision that names a commit by searching messages
// (:/text, main^{/text}) or the index (:path): what it finds depends on
// the commits every ref reaches, and an agent in the mount writes refs.
type SearchError struct{ Rev string }

func (e *SearchError) Error() string {
	return fmt.Sprintf("%s names a commit by a search the agent can steer (its refs are searched): name a commit id or a branch", textsafe.Escape(e.Rev))
}

// searches reports whether a revision of rev-list syntax holds a search
// form on either side of .. or ...
func searches(rev string) bool {
	if strings.Contains(rev, "^{/") {
		return true
	}
	rev = strings.TrimPrefix(rev, "^")
	for _, sep := range []string{"...", ".."} {
		if a, b, ok := strings.Cut(rev, sep); ok {
			return strings.HasPrefix(a, ":") || strings.HasPrefix(b, ":")
		}
	}
	return strings.HasPrefix(rev, ":")
}

// ExactRefError is a name starting with refs/ that is no ref: git would
// go on to try it under refs/, refs/heads/, … (refs/heads/refs/heads/x),
// names anyone who can write refs can make.
type ExactRefError struct{ Name string }

func (e *ExactRefError) Error() string {
	return fmt.Sprintf("no ref is named %s exactly: a name starting with refs/ must be a ref as given; name an existing ref or a commit id", textsafe.Escape(e.Name))
}

// isFullOID reports whether s is a full object id (SHA-1 or SHA-256 in
// hex, either case), which git takes as the object whatever refs exist.
func isFullOID(s string) bool { return (len(s) == 40 || len(s) == 64) && isHex(s) }

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// NamedBases returns the names (not commit ids) that the range revs
// excludes from: the base of A..B, ^A, and both sides of A...B. On the
// agent's clone those are refs the agent can move, and where the base
// is, is what the range leaves unchecked.
func NamedBases(revs []string) []string {
	var out []string
	for _, r := range revs {
		for _, s := range revSides(r) {
			if s.base && s.name != "HEAD" && !isFullOID(s.name) {
				out = append(out, s.name)
			}
		}
	}
	return out
}

// revNames returns the revision names of revs (rev-list syntax): each
// side of A..B and A...B, without ^ before and the ^, ~ or : suffixes
// after (which no ref name holds). A reflog part (@{…}) stays in the
// name. Empty sides (HEAD) and :/search forms have no name.
func revNames(revs []string) []string {
	var names []string
	for _, r := range revs {
		for _, s := range revSides(r) {
			names = append(names, s.name)
		}
	}
	return names
}

// revSide is one named side of a revision: its name, and whether the
// range excludes from it (the base of A..B, ^A, both sides of A...B).
type revSide struct {
	name string
	base bool
}

// revSides splits one revision of rev-list syntax into its named sides,
// each without the ^, ~ or : suffixes after the name.
func revSides(r string) []revSide {
	neg := strings.HasPrefix(r, "^")
	r = strings.TrimPrefix(r, "^")
	var out []revSide
	add := func(side string, base bool) {
		if i := strings.IndexAny(side, "^~:"); i >= 0 {
			side = side[:i]
		}
		if side != "" {
			out = append(out, revSide{side, base})
		}
	}
	if a, b, ok := strings.Cut(r, "..."); ok {
		add(a, true)
		add(b, true)
	} else if a, b, ok := strings.Cut(r, ".."); ok {
		add(a, true)
		add(b, false)
	} else {
		add(r, neg)
	}
	return out
}

// ambiguousWarning is git's warning for a name several refs match.
var ambiguousWarning = regexp.MustCompile(`(?m)^warning: refname '([^'\n]*)' is ambiguous\.$`)

// CheckNames fails when a revision name of revs (rev-list syntax: A..B,
// A...B, ^A, B, A^!, …) may not mean what the reviewer means, because a
// writer of refs or reflogs (an agent in the mount) chose it:
//
//   - a reflog name (main@{0}, @{-1}, …): a *ReflogError;
//   - a search (:/text, main^{/text}, :path): a *SearchError;
//   - a name starting with refs/ that is no ref as given: an
//     *ExactRefError (git would try refs/heads/refs/… next);
//   - a name several refs match (git warns): an *AmbiguousError, and so
//     is a short hex name that is a ref and an object id prefix.
//
// A full object id is the object and a refs/ name that exists is that
// ref, as git itself resolves them, whatever other refs share the name.
func CheckNames(ctx context.Context, repo *gitexec.Repo, revs []string) error {
	if len(revs) == 0 {
		return nil
	}
	for _, r := range revs {
		if searches(r) {
			return &SearchError{Rev: r}
		}
	}
	exact := map[string]bool{}
	for _, name := range revNames(revs) {
		switch {
		case strings.Contains(name, "@{"):
			return &ReflogError{Name: name}
		case isFullOID(name):
		case strings.HasPrefix(name, "refs/"):
			if !refExists(ctx, repo, name) {
				return &ExactRefError{Name: name}
			}
			exact[name] = true
		case len(name) >= 4 && isHex(name):
			if refs := candidates(ctx, repo, name); len(refs) > 0 && hasObjectPrefix(ctx, repo, name) {
				return &AmbiguousError{Name: name, Refs: refs}
			}
		}
	}
	args := append([]string{"-c", "core.warnAmbiguousRefs=true", "rev-parse", "--revs-only", "--end-of-options"}, revs...)
	cmd := repo.Command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A name that is no revision at all is for the check itself to
	// report; only the warning matters here.
	_ = cmd.Run()
	for _, m := range ambiguousWarning.FindAllStringSubmatch(stderr.String(), -1) {
		if isFullOID(m[1]) || exact[m[1]] {
			continue // git takes the object, or the exact ref
		}
		return &AmbiguousError{Name: m[1], Refs: candidates(ctx, repo, m[1])}
	}
	return nil
}

// refExists reports whether name is a ref exactly as given.
func refExists(ctx context.Context, repo *gitexec.Repo, name string) bool {
	_, err := repo.Output(ctx, "show-ref", "--verify", "--quiet", "--end-of-options", name)
	return err == nil
}

// hasObjectPrefix reports whether some object's id starts with prefix.
func hasObjectPrefix(ctx context.Context, repo *gitexec.Repo, prefix string) bool {
	out, err := repo.Output(ctx, "rev-parse", "--disambiguate="+strings.ToLower(prefix))
	return err == nil && len(bytes.TrimSpace(out)) > 0
}

// candidates lists the refs name could mean, in git's order of lookup
// (git rev-parse documents it under "<refname>").
func candidates(ctx context.Context, repo *gitexec.Repo, name string) []string {
	rules := []string{"refs/" + name, "refs/tags/" + name, "refs/heads/" + name, "refs/remotes/" + name, "refs/remotes/" + name + "/HEAD"}
	if strings.HasPrefix(name, "refs/") {
		rules = append([]string{name}, rules...)
	}
	out, err := repo.Output(ctx, append([]string{"for-each-ref", "--format=%(refname)", "--end-of-options"}, rules...)...)
	if err != nil {
		return nil
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		have[l] = true
	}
	var refs []string
	for _, r := range rules {
		if have[r] {
			refs = append(refs, r)
		}
	}
	return refs
}
