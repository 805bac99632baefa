package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/gitcheck"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/internal/ledgersign"
	"github.com/intentfs/intentfs/internal/recordsource"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
)

// signersConfigKey is git's own setting for who may sign (what git log
// --show-signature and git verify-commit read for gpg.format=ssh).
const signersConfigKey = "gpg.ssh.allowedSignersFile"

func allowedSignersFlag(fs *pflag.FlagSet) {
	fs.String("allowed-signers", "", "count only records a checkpoint signed by a key of this allowed-signers file covers (ssh-keygen -Y verify's format; default: "+signersConfigKey+" of your global or system git config, never the repository's)")
}

// signersChoice is where the trusted signers came from, or why there
// are none.
type signersChoice struct {
	Trust *ledgersign.Trust `json:"-"`
	// File is the allowed-signers file; From says how it was chosen
	// ("--allowed-signers", "git config --global", "git config --system").
	File string `json:"file,omitempty"`
	From string `json:"from,omitempty"`
	// Ignored names a repository setting that was not used.
	Ignored string `json:"ignored,omitempty"`
}

// loadSigners finds the allowed-signers file: --allowed-signers, else
// gpg.ssh.allowedSignersFile of the caller's global or system git config.
// The repository's own config (.git/config) is never read for it: an
// agent in a mount can write that file, and would name a signers file
// holding its own key. A setting found there is reported, not used.
func loadSigners(ctx context.Context, a *app, g *gitWorkspace) (*signersChoice, error) {
	c := &signersChoice{}
	if f := flagString(a, "allowed-signers"); f != "" {
		c.File, c.From = f, "--allowed-signers"
	} else {
		for _, scope := range []string{"--global", "--system"} {
			v, err := gitConfigPath(ctx, scope, signersConfigKey)
			if err != nil {
				return nil, err
			}
			if v != "" {
				c.File, c.From = v, "git config "+scope
				break
			}
		}
	}
	if c.File == "" {
		if g != nil {
			if v, _ := g.repo.Line(ctx, "config", "--local", "--get", signersConfigKey); v != "" {
				c.Ignored = fmt.Sprintf("the repository's own config sets %s = %s, which an agent can write: not used; set it in your global git config (git config --global %s FILE) or give --allowed-signers FILE",
					signersConfigKey, textsafe.Escape(v), signersConfigKey)
			}
		}
		return c, nil
	}
	if !filepath.IsAbs(c.File) && c.From != "--allowed-signers" {
		return nil, fmt.Errorf("%s (%s) is %q, a relative path: give it as an absolute path", signersConfigKey, c.From, c.File)
	}
	t, err := ledgersign.LoadTrust(c.File)
	if err != nil {
		return nil, fmt.Errorf("%w (from %s)", err, c.From)
	}
	c.Trust = t
	return c, nil
}

// gitConfigPath reads a path setting of the caller's global or system git
// config (~ expanded), "" when unset. It runs git as the caller, in /,
// so that no repository's config is read.
func gitConfigPath(ctx context.Context, scope, key string) (string, error) {
	if scope == "--global" && os.Getenv("HOME") == "" && os.Getenv("GIT_CONFIG_GLOBAL") == "" && os.Getenv("XDG_CONFIG_HOME") == "" {
		return "", nil // no global config to read (git would fail: $HOME not set)
	}
	cmd := exec.CommandContext(ctx, "git", "config", scope, "--type=path", "--get", key)
	cmd.Dir = "/"
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return "", nil // unset
	case errors.Is(err, exec.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading %s from git config %s: %w", key, scope, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// notChecked says that signatures were not checked, and how to check
// them.
func (c *signersChoice) notChecked() string {
	return "signatures were not checked (no allowed-signers file: give --allowed-signers FILE or set " + signersConfigKey + " in your global git config); records count signed or not"
}

// unsignedPaths remembers, for each path, the chain of a record that
// wrote it and was not counted for want of a signature, to explain a
// check's problems.
type unsignedPaths map[string]string

func (u unsignedPaths) add(r *ledger.Record, chain string) {
	for _, p := range []string{r.Path(), r.Gov().FromPath} {
		if _, ok := u[p]; p != "" && !ok {
			u[p] = chain
		}
	}
}

// explain adds to each problem of a path an unsigned record wrote that
// the record was not counted.
func (u unsignedPaths) explain(rep *gitcheck.Report, prefix string) {
	if len(u) == 0 {
		return
	}
	for i, f := range rep.Problems {
		if f.Kind == gitcheck.KindGovernance {
			continue
		}
		if chain, ok := u[strings.TrimPrefix(f.Path, prefix)]; ok {
			rep.Problems[i].Detail += fmt.Sprintf("; written by an unsigned chain (origin %s): not counted", shortChain(chain))
		}
	}
}

func shortChain(chain string) string {
	if chain == "" {
		return "unknown"
	}
	if len(chain) > 8 {
		return chain[:8] + "…"
	}
	return chain
}

// printSignatures says what the signatures covered, or that they were
// not checked.
func printSignatures(a *app, c *signersChoice, sc *recordsource.SignatureCounts) {
	if c.Ignored != "" {
		fmt.Fprintf(a.stdout, "notice: %s\n", c.Ignored)
	}
	if sc == nil {
		fmt.Fprintf(a.stdout, "notice: %s\n", c.notChecked())
		return
	}
	origins := sc.Origins
	if sc.Local != nil {
		origins = append([]gitnotes.SignedOrigin{*sc.Local}, origins...)
	}
	for _, o := range origins {
		who := "no allowed signer"
		if len(o.Signers) > 0 {
			var names []string
			for _, s := range o.Signers {
				names = append(names, strings.Join(s.Principals, ",")+" ("+s.Key+")")
			}
			who = strings.Join(names, "; ")
		}
		fmt.Fprintf(a.stdout, "signatures: origin %s (%s): %d of %d record(s) signed by %s; %d of %d checkpoint(s) valid\n",
			printable(shortChain(o.Chain)), printable(o.Source), o.Signed, o.Records, printable(who), o.Valid, o.Checkpoints)
		for _, why := range o.Invalid {
			fmt.Fprintf(a.stdout, "            %s\n", printable(why))
		}
	}
	if sc.Unsigned > 0 {
		fmt.Fprintf(a.stdout, "notice: %d record(s) not covered by a checkpoint of a signer in %s: not counted\n", sc.Unsigned, printable(c.File))
	}
}
