package gitnotes

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
)

// remoteName is what a remote name may be here: a plain name, never an
// option or a URL with a transport of its own.
var remoteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// TrackingRef is where Fetch puts a remote's notes before merging them.
func TrackingRef(remote string) string { return "refs/notes/remotes/" + remote + "/intentfs" }

// FetchRefspec and PushRefspec are the refspecs Fetch and Push use, for
// people who run git themselves.
func FetchRefspec(remote string) string { return "+" + Ref + ":" + TrackingRef(remote) }

// PushRefspec is the refspec of Push.
func PushRefspec() string { return Ref + ":" + Ref }

// remoteURL returns the URL of a configured remote. The URL is passed to
// git explicitly, so the remote's other settings (uploadpack,
// receivepack, proxy commands) are never consulted.
func remoteURL(ctx context.Context, repo *gitexec.Repo, remote string) (string, error) {
	if !remoteName.MatchString(remote) {
		return "", fmt.Errorf("%q is not a remote name (letters, digits, '.', '_', '-')", remote)
	}
	url, err := repo.Line(ctx, "config", "--get", "remote."+remote+".url")
	if err != nil || url == "" {
		return "", fmt.Errorf("no remote %q in this repository (git remote -v lists them)", remote)
	}
	if strings.HasPrefix(url, "-") {
		return "", fmt.Errorf("remote %q has the URL %q, which git would read as an option", remote, url)
	}
	return url, nil
}

// Fetch fetches the remote's notes into TrackingRef(remote) and merges
// them into Ref. It returns git's output.
func Fetch(ctx context.Context, repo *gitexec.Repo, remote string) (string, error) {
	url, err := remoteURL(ctx, repo, remote)
	if err != nil {
		return "", err
	}
	var log strings.Builder
	out, err := repo.TransportOutput(ctx, "fetch", "--no-tags", "--no-write-fetch-head", "--upload-pack=git-upload-pack",
		"--end-of-options", url, FetchRefspec(remote))
	if err != nil {
		if strings.Contains(string(out), "couldn't find remote ref") {
			// git's "fatal: couldn't find remote ref" is no failure
			// here: say what it means instead.
			return "the remote has no notes yet\n", nil
		}
		// git's output is in the error, once.
		return "", transportError("fetching notes from", remote, url, out, err, repo)
	}
	log.Write(out)
	merged, err := Merge(ctx, repo, TrackingRef(remote))
	log.WriteString(merged)
	return log.String(), err
}

// Merge merges the notes of ref into Ref with git's cat_sort_uniq
// strategy: a note both sides changed becomes the sorted union of their
// lines, each line once. A record's line is the same bytes in every clone,
// so this is a merge by record id that loses no record; the order of
// lines within a note does not matter, since readers order records by
// their hash chain and time.
func Merge(ctx context.Context, repo *gitexec.Repo, ref string) (string, error) {
	if !HasRef(ctx, repo, ref) {
		return "", nil
	}
	if !HasRef(ctx, repo, Ref) {
		if _, err := repo.Output(ctx, "update-ref", Ref, ref); err != nil {
			return "", fmt.Errorf("creating %s: %w", Ref, err)
		}
		return "notes: created " + Ref + " from " + ref + "\n", nil
	}
	out, err := repo.Output(ctx, "notes", "--ref="+Ref, "merge", "--strategy=cat_sort_uniq", "--quiet", "--end-of-options", ref)
	if err != nil {
		return string(out), fmt.Errorf("merging notes from %s: %w", ref, err)
	}
	return "notes: merged " + ref + " into " + Ref + "\n", nil
}

// Push fetches and merges the remote's notes, then pushes Ref. A push
// that loses a race with another clone's push is retried once after
// merging again.
func Push(ctx context.Context, repo *gitexec.Repo, remote string) (string, error) {
	url, err := remoteURL(ctx, repo, remote)
	if err != nil {
		return "", err
	}
	if !HasRef(ctx, repo, Ref) {
		return "", fmt.Errorf("there are no notes to push yet: run intentfs notes sync first")
	}
	var log strings.Builder
	for attempt := 0; ; attempt++ {
		out, err := Fetch(ctx, repo, remote)
		log.WriteString(out)
		if err != nil {
			return log.String(), err
		}
		pout, err := repo.TransportOutput(ctx, "push", "--no-verify", "--receive-pack=git-receive-pack", "--end-of-options", url, PushRefspec())
		if err == nil {
			log.Write(pout)
			return log.String(), nil
		}
		if attempt > 0 || !strings.Contains(string(pout), "rejected") {
			return log.String(), transportError("pushing notes to", remote, url, pout, err, repo)
		}
		log.Write(pout)
	}
}

// transportError says why a fetch or push of notes failed. git refuses a
// repository on a local path that belongs to another user than the one
// it runs as ("detected dubious ownership"), and tells the user to add a
// safe.directory to their global configuration, which intentfs never
// reads: say what works instead.
func transportError(what, remote, url string, out []byte, err error, repo *gitexec.Repo) error {
	if strings.Contains(string(out), "detected dubious ownership") {
		yours := fmt.Sprintf("git fetch %s '%s' && git notes --ref=intentfs merge -s cat_sort_uniq %s", remote, FetchRefspec(remote), TrackingRef(remote))
		if strings.HasPrefix(what, "pushing") {
			yours = fmt.Sprintf("git push %s %s", remote, PushRefspec())
		}
		return fmt.Errorf("%s %s: git refuses to read %s, which belongs to another user than the one intentfs runs git as here (uid %d). "+
			"Run this as the owner of %s, or use your own git, which honours your safe.directory: %s",
			what, remote, url, repo.RunsAs(), url, yours)
	}
	return fmt.Errorf("%s %s: %w", what, remote, err)
}
