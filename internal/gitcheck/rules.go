package gitcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Where the rules of a check come from (Rules.From).
const (
	RulesFromBase   = "base"          // the range's base: the one revision it excludes
	RulesFromOption = "--policy-from" // a revision the reviewer named
)

// Rules are the policy and ignore files a check judges a range by, read
// from the tree of a commit the range does not hold: what the pull
// request under review cannot rewrite. Never the work tree, which in CI
// is the pull request's head.
type Rules struct {
	Intents *policy.Intents `json:"-"`
	Ignore  *policy.Ignore  `json:"-"`
	// Commit is the commit they were read from.
	Commit string `json:"commit"`
	// From says how that commit was chosen (RulesFromBase,
	// RulesFromOption).
	From string `json:"from"`
	// Rev is the revision as the reviewer named it (with --policy-from).
	Rev string `json:"rev,omitempty"`
	// Policy is the policy file's workspace path.
	Policy string `json:"policy"`
	// IgnoreFiles are the ignore files the commit holds.
	IgnoreFiles []string `json:"ignore_files"`
}

// ErrNoBase is returned by RangeBase for a range that excludes no
// revision (all of a branch's history): it has no side a reviewer
// already trusts.
var ErrNoBase = errors.New("the range excludes no revision, so it has no base to read the rules from")

// RangeBase returns the commit a range excludes, whose rules judge it:
// B for B..H and ^B H, the merge-base for B...H. A range excluding
// several commits (^A ^B H, or B...H with several merge-bases) has no
// one base and is an error, as is one excluding none (ErrNoBase): name
// the revision with --policy-from.
func RangeBase(ctx context.Context, repo *gitexec.Repo, revs []string) (string, error) {
	args := append([]string{"rev-parse", "--end-of-options"}, revs...)
	out, err := repo.Output(ctx, append(args, "--")...)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", textsafe.Escape(strings.Join(revs, " ")), err)
	}
	var bases []string
	for _, l := range strings.Split(string(out), "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(l), "^"); ok && gitexec.ValidOID(id) && !slices.Contains(bases, id) {
			bases = append(bases, id)
		}
	}
	switch len(bases) {
	case 0:
		return "", ErrNoBase
	case 1:
		return bases[0], nil
	}
	short := make([]string, len(bases))
	for i, b := range bases {
		short[i] = ledger.ShortHash(b)
	}
	return "", fmt.Errorf("the range excludes %d commits (%s), so it has no one base to read the rules from", len(bases), strings.Join(short, ", "))
}

// ResolveRulesRev resolves a revision a reviewer names for the rules
// (--policy-from) to a commit that is not in the range revs: the rules of
// a commit the range holds are the pull request's own. The name is held
// to the same rules as a range's (CheckNames).
func ResolveRulesRev(ctx context.Context, repo *gitexec.Repo, rev string, revs []string) (string, error) {
	if strings.HasPrefix(rev, "-") || rev == "" {
		return "", fmt.Errorf("--policy-from %q: not a revision", rev)
	}
	if err := CheckNames(ctx, repo, []string{rev}); err != nil {
		return "", fmt.Errorf("--policy-from: %w", err)
	}
	commit, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil || !gitexec.ValidOID(commit) {
		return "", fmt.Errorf("--policy-from %s: no such commit here (fetch it first)", textsafe.Escape(rev))
	}
	args := append([]string{"rev-list", "--end-of-options"}, revs...)
	out, err := repo.Output(ctx, append(args, "--")...)
	if err != nil {
		return "", fmt.Errorf("listing the commits of %s: %w", textsafe.Escape(strings.Join(revs, " ")), err)
	}
	if bytes.Contains(out, []byte(commit+"\n")) {
		return "", fmt.Errorf("--policy-from %s: commit %s is in the range being checked, whose rules are what is under review; name a revision the range does not hold, such as its base", textsafe.Escape(rev), ledger.ShortHash(commit))
	}
	return commit, nil
}

// LoadRules reads the policy and the ignore files from commit's tree, at
// the workspace's path prefix ("" or "dir/"). Only regular blobs are
// read, each bounded (policy.MaxPolicyBytes, policy.MaxIgnoreBytes); a
// symlink, a tree or a submodule where a rules file belongs is an error,
// as is a commit without a policy.
func LoadRules(ctx context.Context, repo *gitexec.Repo, commit, prefix string) (*Rules, error) {
	if !gitexec.ValidOID(commit) {
		return nil, fmt.Errorf("%q is not a commit id", commit)
	}
	files := append([]string{policy.IntentsFile}, policy.IgnoreFiles()...)
	args := []string{"ls-tree", "-z", "--full-tree", commit, "--"}
	for _, f := range files {
		args = append(args, prefix+f)
	}
	out, err := repo.Output(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("listing the rules files of %s: %w", ledger.ShortHash(commit), err)
	}
	entries, err := parseTreeEntries(out)
	if err != nil {
		return nil, fmt.Errorf("listing the rules files of %s: %w", ledger.ShortHash(commit), err)
	}
	blobs, err := repo.Blobs(ctx)
	if err != nil {
		return nil, err
	}
	defer blobs.Close()
	short := ledger.ShortHash(commit)
	read := func(rel string, max int64) ([]byte, error) {
		e, ok := entries[prefix+rel]
		if !ok {
			return nil, fmt.Errorf("%s at %s: %w", rel, short, fs.ErrNotExist)
		}
		switch e.mode {
		case "100644", "100755":
		case "120000":
			return nil, fmt.Errorf("%s at %s is a symlink: rules are read only from regular files; a human replaces it on the base with the file itself", rel, short)
		default:
			return nil, fmt.Errorf("%s at %s is not a regular file (mode %s): a human replaces it on the base with the file itself", rel, short, e.mode)
		}
		data, err := blobs.Read(e.oid, max)
		if err != nil {
			return nil, fmt.Errorf("reading %s at %s: %w", rel, short, err)
		}
		return data, nil
	}
	r := &Rules{Commit: commit, Policy: policy.IntentsFile, IgnoreFiles: []string{}}
	data, err := read(policy.IntentsFile, policy.MaxPolicyBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist at %s, the revision the rules come from: a human lands the policy there first, or names another revision with --policy-from", policy.IntentsFile, short)
	}
	if err != nil {
		return nil, err
	}
	if r.Intents, _, err = policy.ParseIntents(short+":"+policy.IntentsFile, data); err != nil {
		return nil, fmt.Errorf("the policy at %s: %w", short, err)
	}
	r.Ignore, _, err = policy.IgnoreFrom(func(rel string) ([]byte, error) {
		data, err := read(rel, policy.MaxIgnoreBytes)
		if err == nil {
			r.IgnoreFiles = append(r.IgnoreFiles, rel)
		}
		return data, err
	})
	if err != nil {
		return nil, fmt.Errorf("the ignore files at %s: %w", short, err)
	}
	return r, nil
}

type treeEntry struct{ mode, typ, oid string }

// parseTreeEntries parses git ls-tree -z output: "MODE TYPE OID\tPATH\0".
func parseTreeEntries(out []byte) (map[string]treeEntry, error) {
	entries := map[string]treeEntry{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 3 || !gitexec.ValidOID(f[2]) {
			return nil, fmt.Errorf("unexpected ls-tree line %q", textsafe.Escape(string(rec)))
		}
		entries[string(path)] = treeEntry{mode: f[0], typ: f[1], oid: f[2]}
	}
	return entries, nil
}
