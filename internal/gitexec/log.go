package gitexec

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

// ZeroOID reports whether an object id is git's all-zero "no object".
func ZeroOID(s string) bool { return strings.Trim(s, "0") == "" }

// Change is one path a commit changed relative to its first parent.
type Change struct {
	// Status is git's: A added, M modified, D deleted, T type changed.
	Status  byte
	OldMode string
	NewMode string
	OldBlob string
	NewBlob string
	// Path is git's path, relative to the top of the work tree.
	Path string
}

// Commit is a commit and what it changed.
type Commit struct {
	ID      string
	Parents []string
	Changes []Change
}

// Query selects commits: Revs in git rev-list syntax (e.g. "main..HEAD"),
// Opts are intentfs's own options ("--since=...", "--all"), and Paths, if
// set, limit the commits to those changing them (as literal paths).
type Query struct {
	Opts, Revs, Paths []string
}

// Commits streams the non-merge commits q selects, oldest first, with what each changed relative to
// its parent (renames as a deletion and an addition), to fn. It is one
// `git log --raw -z` pass however many commits there are. revs are
// passed after --end-of-options, so a revision cannot be an option.
func (r *Repo) Commits(ctx context.Context, q Query, fn func(*Commit) error) error {
	args := []string{"log", "--no-merges", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", "--raw", "-z",
		"--no-abbrev", "--reverse", "--format=%x01%H %P"}
	args = append(append(append(args, q.Opts...), "--end-of-options"), q.Revs...)
	args = append(args, "--")
	for _, p := range q.Paths {
		args = append(args, ":(literal)"+p)
	}
	cmd := r.Command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	perr := parseRawLog(bufio.NewReaderSize(out, 1<<20), fn)
	if perr != nil {
		// Stop git before waiting for it: the caller gave up.
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if perr != nil {
		return perr
	}
	if werr != nil {
		return &Error{Args: args, Stderr: stderr.String(), Err: werr}
	}
	return nil
}

// parseRawLog reads `git log --raw -z --format=%x01%H %P`: a header token
// "\x01<id> <parents>" per commit, then per changed path a token
// ":<old mode> <new mode> <old blob> <new blob> <status>" and a token with
// the path. Tokens end in NUL; a newline may precede a token. The parser
// knows which token comes next, so no path, whatever bytes it holds, is
// ever read as a header.
func parseRawLog(br *bufio.Reader, fn func(*Commit) error) error {
	var cur *Commit
	var pending *Change
	flush := func() error {
		if cur == nil {
			return nil
		}
		c := cur
		cur = nil
		return fn(c)
	}
	for {
		tok, err := br.ReadBytes(0)
		if len(tok) == 0 && err == io.EOF {
			if pending != nil {
				return fmt.Errorf("git log: output ends before the path of a change")
			}
			return flush()
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("git log: %w", err)
		}
		tok = bytes.TrimSuffix(tok, []byte{0})
		if pending != nil {
			pending.Path = string(tok)
			cur.Changes = append(cur.Changes, *pending)
			pending = nil
			continue
		}
		tok = bytes.TrimLeft(tok, "\n")
		switch {
		case len(tok) == 0:
			continue
		case tok[0] == 1:
			if err := flush(); err != nil {
				return err
			}
			f := strings.Fields(string(tok[1:]))
			if len(f) == 0 {
				return fmt.Errorf("git log: empty commit header")
			}
			cur = &Commit{ID: f[0], Parents: f[1:]}
		case tok[0] == ':' && cur != nil:
			f := strings.Fields(string(tok[1:]))
			if len(f) != 5 || len(f[4]) == 0 {
				return fmt.Errorf("git log: unexpected change line %q", tok)
			}
			pending = &Change{OldMode: f[0], NewMode: f[1], OldBlob: f[2], NewBlob: f[3], Status: f[4][0]}
		default:
			return fmt.Errorf("git log: unexpected output %q", tok)
		}
		if err == io.EOF {
			return flush()
		}
	}
}
