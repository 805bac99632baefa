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
	full := ""
	refs := make([]string, len(e.Refs))
	for i, r := range e.Refs {
		refs[i] = textsafe.Escape(r)
		if r == "refs/heads/"+e.Name {
			full = refs[i]
		}
	}
	name := textsafe.Escape(e.Name)
	what := strings.Join(refs, " and ")
	if len(e.Refs) < 2 {
		what = "git finds more than one ref or file by that name"
	}
	if full == "" {
		return fmt.Sprintf("%s is ambiguous: %s; name it in full (refs/heads/…, refs/tags/…, refs/remotes/…)", name, what)
	}
	return fmt.Sprintf("%s is ambiguous: %s; name it in full (%s)", name, what, full)
}

// ambiguousWarning is git's warning for a name several refs match.
var ambiguousWarning = regexp.MustCompile(`(?m)^warning: refname '([^'\n]*)' is ambiguous\.$`)

// CheckNames fails with an *AmbiguousError when a revision name of revs
// (rev-list syntax: A..B, A...B, ^A, B, A^!, …) is ambiguous. git itself
// parses the names (rev-parse, with its ambiguity warning forced on over
// the repository's config) and the warning is taken as the error.
func CheckNames(ctx context.Context, repo *gitexec.Repo, revs []string) error {
	if len(revs) == 0 {
		return nil
	}
	args := append([]string{"-c", "core.warnAmbiguousRefs=true", "rev-parse", "--revs-only", "--end-of-options"}, revs...)
	cmd := repo.Command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A name that is no revision at all is for the check itself to
	// report; only the warning matters here.
	_ = cmd.Run()
	m := ambiguousWarning.FindStringSubmatch(stderr.String())
	if m == nil {
		return nil
	}
	return &AmbiguousError{Name: m[1], Refs: candidates(ctx, repo, m[1])}
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
