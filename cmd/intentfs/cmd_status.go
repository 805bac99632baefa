package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
)

func statusCmd() *command {
	return &command{
		name: "status", summary: "show a mount's intent, counters and recent denials", usage: "",
		help: `Shows the active intent, the policy state (including a rejected edit), the
ledger path and its write statistics, counters, and the most recent denials.
In observe mode (enforcement: observe in the policy) it counts the changes
that were allowed but the policy would refuse (would-deny), and those an
approval rule would have held (would-hold).

Examples:
  intentfs status --mount /workspace
  intentfs status --json | jq .counters
  intentfs status --json | jq .counters.would_deny   # observe mode`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.Bool("json", false, "print the status as JSON")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("unexpected arguments %v", args)
			}
			mnt, _ := a.fs.GetString("mount")
			e, err := findMount(mnt)
			var unlisted uncontrolledMountError
			if errors.As(err, &unlisted) && unlisted.dead == nil {
				return statusReadOnly(a, unlisted.mount.Mountpoint)
			}
			if err != nil {
				return err
			}
			resp, err := call(e, control.Request{Op: "status"})
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, resp.Status)
			}
			printStatus(a, resp.Status)
			return nil
		},
	}
}

// maxStatusBytes bounds what is read from a mount's .intentfs/status.
const maxStatusBytes = 1 << 20

// statusReadOnly shows the status of a mount this user cannot reach
// through its control socket (another user's), from the .intentfs/status
// file every user of the mount may read.
func statusReadOnly(a *app, mountpoint string) error {
	st, err := readStatusFile(mountpoint)
	if err != nil {
		return err
	}
	if jsonOut(a) {
		return printJSON(a, st)
	}
	printStatus(a, st)
	fmt.Fprintf(a.stdout, "read-only:  from %s; uid %d may not control this mount (it is not in this user's registry %s)\n", filepath.Join(mountpoint, ".intentfs", "status"), os.Geteuid(), mounts.RuntimeDir())
	return nil
}

// readStatusFile reads a mount's .intentfs/status.
func readStatusFile(mountpoint string) (*control.Status, error) {
	path := filepath.Join(mountpoint, ".intentfs", "status")
	// Read as a workspace file is: the registry names the mountpoint, but
	// what is there now may be a plain directory holding a FIFO or a link.
	b, err := safeio.ReadFile(mountpoint, filepath.Join(".intentfs", "status"), maxStatusBytes)
	if err != nil {
		return nil, fmt.Errorf("%s is an intentfs mount this user may not control, and its status is unreadable: %w", mountpoint, err)
	}
	var st control.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &st, nil
}

func printStatus(a *app, st *control.Status) {
	w := a.stdout
	fmt.Fprintf(w, "mount:      %s\nsource:     %s\ndaemon:     pid %d, intentfs %s, up %s\n", st.Mountpoint, st.Source, st.Pid, st.Version,
		time.Since(st.StartedAt).Round(time.Second))
	fmt.Fprintf(w, "intent:     %s\n", intentLine(st))
	mode := "fail-closed (undecidable changes are denied)"
	if st.FailOpen {
		mode = "FAIL-OPEN (undecidable changes are allowed)"
	}
	fmt.Fprintf(w, "policy:     %s, %d intents, %s\n", st.Policy.File, st.Policy.Intents, mode)
	if st.Policy.ReloadError != "" {
		fmt.Fprintf(w, "            LAST EDIT REJECTED, previous policy in force:\n            %s\n",
			strings.ReplaceAll(st.Policy.ReloadError, "\n", "\n            "))
	}
	fmt.Fprintf(w, "ledger:     %s (%d records written in %d fsync batches, %d queued, fsync last %.1f ms, max %.1f ms)\n", st.LedgerPath, st.Ledger.Appended, st.Ledger.Commits, st.Ledger.QueueDepth, st.Ledger.LastFsyncMs, st.Ledger.MaxFsyncMs)
	if st.Ledger.State == "failing" {
		fmt.Fprintf(w, "            LEDGER FAILING since %s, CHANGES ARE REFUSED: %s\n", st.Ledger.FailingSince.Local().Format(time.TimeOnly), st.Ledger.Failure)
	} else if st.Ledger.LastWriteErr != "" {
		fmt.Fprintf(w, "            LEDGER WRITE ERROR: %s\n", st.Ledger.LastWriteErr)
	}
	fmt.Fprintf(w, "store:      %s\n", storeLine(st.Store))
	fmt.Fprintf(w, "signing:    %s\n", signingLine(st.Signing))
	fmt.Fprintf(w, "upstream:   %s\n", upstreamLine(st.Upstream))
	fmt.Fprintf(w, "passthrough: %v\n", st.Passthrough)
	fmt.Fprintf(w, "transport:  %s\n", transportName(st.Transport))
	if st.DataPath != "" {
		fmt.Fprintf(w, "data path:  %s\n", st.DataPath)
	}
	cache := time.Duration(st.CacheSeconds * float64(time.Second))
	if st.SourceWatched {
		fmt.Fprintf(w, "source watch: on (a change made directly in the source shows at once; the kernel caches entries for %v)\n", cache)
	} else {
		fmt.Fprintf(w, "source watch: off (a change made directly in the source shows within %v; see the mount's log for why)\n", cache)
	}
	if x := st.Export; x != nil {
		fmt.Fprintf(w, "export:     %s (OTLP %s): %d exported, %d failed, %d dropped, %d queued\n", textsafe.Escape(x.Endpoint), x.Protocol,
			x.Exported, x.Failed, x.Dropped, x.Queued)
		if x.LastError != "" {
			fmt.Fprintf(w, "            EXPORT FAILING (the ledger is unaffected): %s\n", textsafe.Escape(x.LastError))
		}
	}
	c := st.Counters
	fmt.Fprintf(w, "counters:   %d allowed, %d denied, %d recorded, %d bytes hashed (%d cache hits)\n", c.Allowed, c.Denied, c.Recorded, c.BytesHashed, c.HashCacheHits)
	if st.WorkspaceEnforcement != "" {
		fmt.Fprintf(w, "enforcement: %s\n", enforcementLine(st))
	}
	if st.Enforcement == "observe" || c.WouldDeny > 0 || c.WouldHold > 0 {
		fmt.Fprintf(w, "observe:    %d would-deny, %d would-hold (enforcement for the active intent: %s; list them with `intentfs log --would-deny`)\n",
			c.WouldDeny, c.WouldHold, orDash(st.Enforcement))
	}
	if len(st.Ops) > 0 {
		type kv struct {
			k string
			v uint64
		}
		var ops []kv
		var total uint64
		for k, v := range st.Ops {
			ops = append(ops, kv{k, v})
			total += v
		}
		sort.Slice(ops, func(i, j int) bool { return ops[i].v > ops[j].v })
		var parts []string
		for i, o := range ops {
			if i == 8 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %d", o.k, o.v))
		}
		fmt.Fprintf(w, "fuse:       %d requests (%s)\n", total, strings.Join(parts, ", "))
	}
	if st.Waiting > 0 {
		fmt.Fprintf(w, "waiting:    %d for a human: intentfs approvals, then intentfs approve ID or deny ID\n", st.Waiting)
	}
	if len(st.Sessions) > 0 {
		fmt.Fprintf(w, "sessions:\n")
		printSessions(w, st.Sessions)
	}
	if len(st.FilePermissions) > 0 {
		fmt.Fprintf(w, "file permissions (the source's owner/mode/ACL refuse these before intentfs sees them; they are not policy denials; see intentfs doctor):\n")
		for _, p := range st.FilePermissions {
			fmt.Fprintf(w, "  session %s, uid %d, %s: %s\n", textsafe.Escape(p.Session), p.Uid, textsafe.Escape(p.Intent), textsafe.Escape(p.Reason))
		}
	}
	if len(st.RecentDenials) == 0 {
		fmt.Fprintf(w, "denials:    none\n")
		return
	}
	fmt.Fprintf(w, "recent denials (newest last):\n")
	for _, d := range st.RecentDenials {
		comm := ""
		if d.Process != nil {
			comm = fmt.Sprintf("%s[%d]", d.Process.Comm, d.Process.Pid)
		}
		esc := textsafe.Escape
		fmt.Fprintf(w, "  %s  %-10s %-30s %-14s %s\n    %s\n", d.Time.Local().Format("15:04:05"), esc(d.Op), esc(d.Path), esc(d.Code), esc(comm), esc(d.Reason))
	}
}

// transportName says what a status's transport is.
func transportName(t string) string {
	switch t {
	case "uring":
		return "uring (FUSE over io_uring)"
	case "dev":
		return "dev (/dev/fuse)"
	}
	return textsafe.Escape(t)
}

// intentLine says which intent governs whom. The mount's active intent is
// for processes outside sessions only; each live session has its own,
// and a reader outside them (docker exec ... intentfs status) must not
// take "none" for the agent's.
func intentLine(st *control.Status) string {
	mount := "none"
	if st.ActiveIntent != "" {
		mount = fmt.Sprintf("%s %q (%s)", st.ActiveIntent, st.IntentName, st.IntentStatus)
	}
	var live []string
	for _, s := range st.Sessions {
		if !s.Live {
			continue
		}
		in := s.Intent
		if in == "" {
			in = "none"
		}
		if s.Pinned {
			in += " (pinned)"
		}
		live = append(live, in)
	}
	switch {
	case st.Session != nil && st.ActiveIntent == "":
		return "none for this session (its governed changes are denied)"
	case st.Session != nil:
		return mount + " (this session's)"
	case len(live) == 0 && st.ActiveIntent == "":
		return "none (governed changes are denied)"
	case len(live) == 0:
		return mount
	}
	noun := "sessions with their own"
	if len(live) == 1 {
		noun = "session with its own"
	}
	return fmt.Sprintf("%s for processes outside sessions; %d %s: %s", mount, len(live), noun, strings.Join(live, ", "))
}

// upstreamLine says what the mount's git may bring in outside the scope.
func upstreamLine(u control.UpstreamStatus) string {
	if !u.Configured {
		return "none declared (git's writes outside the scope are refused; see `upstream:` in the policy file)"
	}
	line := textsafe.Escape(u.URL) + " " + textsafe.Escape(u.Ref)
	switch {
	case u.Commit != "":
		line += fmt.Sprintf(" at %.12s (fetched %s ago)", u.Commit, time.Since(u.FetchedAt).Round(time.Second))
	case u.Fetching:
		line += ", fetching"
	default:
		line += ", not fetched yet"
	}
	if u.LastErr != "" {
		line += "\n            LAST FETCH FAILED: " + textsafe.Escape(gitFailure(u.LastErr))
	}
	return line
}

// gitFailure shortens a git command's failure to what git said was fatal
// (its advice lines aside), or to its first line.
func gitFailure(msg string) string {
	lines := strings.Split(msg, "\n")
	var fatal []string
	for _, l := range lines {
		if i := strings.Index(l, "fatal: "); i >= 0 {
			fatal = append(fatal, strings.TrimSpace(l[i:]))
		}
	}
	if len(fatal) == 0 {
		return strings.TrimSpace(lines[0])
	}
	return strings.Join(fatal, "; ")
}

// signingLine says whether the mount signs its records.
func signingLine(s control.Signing) string {
	if !s.Signed {
		return "none: records are UNSIGNED (mount --signing-key signs them; a check with an allowed-signers file does not count unsigned records)"
	}
	line := fmt.Sprintf("checkpoints signed by %s, %d written", strings.Join(s.Keys, ", "), s.Checkpoints)
	if s.LastCheckpoint != nil {
		line += ", the last at " + s.LastCheckpoint.Local().Format(time.TimeOnly)
	}
	return line
}

// storeLine is the object store's use against its bound.
func storeLine(u control.StoreUsage) string {
	line := fmt.Sprintf("%d object(s), %d bytes; copies take %d of the %d-byte bound (%d%%); %d bytes free for unprivileged users", u.Objects, u.Bytes, u.CopiedBytes, u.MaxBytes, percentOf(u.CopiedBytes, u.MaxBytes), u.AvailBytes)
	if u.Refused > 0 {
		line += fmt.Sprintf("; %d pre-image(s) refused, their changes too (PREIMAGE_UNAVAILABLE): run intentfs gc or mount with a larger --store-max-bytes", u.Refused)
	}
	if len(u.CopiedByUID) > 0 {
		uids := make([]uint32, 0, len(u.CopiedByUID))
		for uid := range u.CopiedByUID {
			uids = append(uids, uid)
		}
		sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
		parts := make([]string, 0, len(uids))
		for _, uid := range uids {
			who := fmt.Sprintf("uid %d", uid)
			if uid == objects.UnknownUID {
				who = "the daemon"
			}
			parts = append(parts, fmt.Sprintf("%s %d", who, u.CopiedByUID[uid]))
		}
		line += "; copied since mount: " + strings.Join(parts, ", ")
	}
	return line
}

// percentOf is part as a whole percentage of whole (0 when whole is 0).
func percentOf(part, whole int64) int64 {
	if whole <= 0 {
		return 0
	}
	return part * 100 / whole
}

// maxModesShown bounds the intents the enforcement line names.
const maxModesShown = 10

// enforcementLine is the workspace's default mode and that of each intent
// in progress or active: an intent may set its own.
func enforcementLine(st *control.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace default %s", st.WorkspaceEnforcement)
	n := 0
	for _, ie := range st.IntentEnforcement {
		if ie.Status != "IN_PROGRESS" && ie.ID != st.ActiveIntent {
			continue
		}
		if n == maxModesShown {
			b.WriteString(", and more (intentfs status --json)")
			break
		}
		sep := ", "
		if n == 0 {
			sep = "; in progress: "
		}
		fmt.Fprintf(&b, "%s%s %s", sep, textsafe.Escape(ie.ID), ie.Enforcement)
		if ie.ID == st.ActiveIntent {
			b.WriteString(" (active)")
		}
		n++
	}
	return b.String()
}
