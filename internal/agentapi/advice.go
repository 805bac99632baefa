package agentapi

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/intentfs/intentfs/control"
)

// maxMessageBytes bounds one message handed to an agent.
const maxMessageBytes = 4096

// Clean makes text safe to show: control characters (terminal escapes in
// a file name, say) become '?', and it is cut at maxMessageBytes.
func Clean(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return '?'
		}
		return r
	}, s)
	if len(s) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// selectable reports whether an intent in this status may be selected.
func selectable(status string) bool { return status == "IN_PROGRESS" || status == "PENDING" }

// Advice says what an agent should do about a refused change: which
// intent to select, or whom to ask.
func Advice(mountpoint string, r *control.DryRunResult) string {
	a := policyAdvice(mountpoint, r)
	if r.FilePermissions != "" && r.Code != control.CodeFilePermissions {
		a += " Even then the file's own permissions refuse your uid (" + r.FilePermissions + "): that needs the human who owns the checkout (intentfs doctor names the fix)."
	}
	return a
}

func policyAdvice(mountpoint string, r *control.DryRunResult) string {
	active := filepath.Join(mountpoint, ControlDirName, "active")
	var cand, closed []string
	for _, in := range r.CoveredBy {
		if in.ID == r.ActiveIntent {
			continue
		}
		desc := fmt.Sprintf("%s %q (%s)", in.ID, in.Name, in.Status)
		if selectable(in.Status) {
			cand = append(cand, desc)
		} else {
			closed = append(closed, desc)
		}
	}
	switch r.Code {
	case control.CodeFilePermissions:
		return filePermissionsAdvice(r)
	case "PROTECTED_PATH":
		return "This path is protected by intentfs (the policy, or git internals): no intent lets an agent change it. Leave it to the human."
	case "INTERNAL_ERROR":
		return "intentfs could not decide and refuses (fail-closed); tell the human."
	}
	if r.Pinned && r.Code != "INTENT_NOT_IN_PROGRESS" {
		request := filepath.Join(mountpoint, ControlDirName, "request")
		if len(cand)+len(closed) > 0 {
			return fmt.Sprintf("This session is pinned to %s by the human, so it cannot switch to %s, which covers %s. Leave the change to the human, or ask for the scope: printf 'paths: %s\\nwhy: REASON\\n' > %s (or the MCP tool request_scope).",
				r.ActiveIntent, strings.Join(append(cand, closed...), ", "), r.Path, r.Path, request)
		}
		return fmt.Sprintf("This session is pinned to %s by the human, and no intent covers %s. Leave the change to the human, or ask for the scope: printf 'paths: %s\\nwhy: REASON\\n' > %s (or the MCP tool request_scope).",
			r.ActiveIntent, r.Path, r.Path, request)
	}
	if len(cand) > 0 {
		first := r.CoveredBy[0].ID
		for _, in := range r.CoveredBy {
			if in.ID != r.ActiveIntent && selectable(in.Status) {
				first = in.ID
				break
			}
		}
		return fmt.Sprintf("Select the intent that covers %s: %s. Run `echo %s > %s` (or the MCP tool select_intent), then load its context (cat %s). Switch only if that work is what you were asked to do.",
			r.Path, strings.Join(cand, ", "), first, active, filepath.Join(mountpoint, ControlDirName, "context"))
	}
	if r.Code == "INTENT_NOT_IN_PROGRESS" {
		return "The active intent does not allow changes in its current state; ask the human to start or unblock it, or select an IN_PROGRESS intent (cat " + filepath.Join(mountpoint, ControlDirName, "intents") + ")."
	}
	if len(closed) > 0 {
		return fmt.Sprintf("%s is covered only by %s, which cannot be selected now. Ask the human to reopen the work or widen another intent's scope.", r.Path, strings.Join(closed, ", "))
	}
	if r.ActiveIntent == "" {
		return fmt.Sprintf("No intent covers %s and none is active. Ask the human to create one or widen a scope (intentfs intent scope ID --add 'GLOB').", r.Path)
	}
	return fmt.Sprintf("No intent covers %s. Stay inside the owned_scope of %s, or ask the human to widen it (intentfs intent scope %s --add 'GLOB') or to create an intent for this work. Do not work around it: other paths, links and renames are checked too.",
		r.Path, r.ActiveIntent, r.ActiveIntent)
}

// filePermissionsAdvice is what to do about a change the source's own
// permissions refuse: intentfs cannot grant it, and no intent or scope
// request changes it.
func filePermissionsAdvice(r *control.DryRunResult) string {
	return "This is not an intentfs decision: the file's owner, mode or ACL refuses your uid, and no intent or scope request changes that. " +
		"Ask the human who owns the checkout to give your uid write access (chown or chmod in the source; intentfs doctor names the fix), or leave the file alone."
}

// DenyMessage is the whole explanation of a change that would be refused.
func DenyMessage(mountpoint string, r *control.DryRunResult) string {
	if r.Code == control.CodeFilePermissions {
		return Clean(fmt.Sprintf("The file system's own permissions refuse this change, not intentfs's policy (%s %s, %s): %s. %s", r.Op, r.Path, r.Code, strings.TrimSuffix(r.Reason, "."), Advice(mountpoint, r)))
	}
	return Clean(fmt.Sprintf("intentfs would refuse this change (%s %s, %s): %s. %s", r.Op, r.Path, r.Code, strings.TrimSuffix(r.Reason, "."), Advice(mountpoint, r)))
}

// policyDenialPrefix opens every refusal a hook hands to an agent. Claude
// Code shows each PreToolUse refusal to the model after its own label,
// "PreToolUse:TOOL hook error: ", whichever output form the hook uses; the
// words right after it say that a policy decided, so the model neither
// retries nor works around a hook it believes is broken.
const policyDenialPrefix = "Permission denied by intentfs policy (a decision, not a failure of the hook): "

// filePermissionsDenialPrefix opens a refusal that the source's own
// permissions make, which intentfs only reports.
const filePermissionsDenialPrefix = "Permission denied by the file system's own permissions, not intentfs's policy (a decision, not a failure of the hook): "

// HookDenyReason is the reason a PreToolUse hook gives for refusing a
// change the mount would refuse: the decision, the file the agent meant
// and what it would have done to it, why, and what to do instead.
func HookDenyReason(mountpoint string, r *control.DryRunResult) string {
	if r.Code == control.CodeFilePermissions {
		// Not a policy decision: saying so would send the agent after an
		// intent or a scope that changes nothing.
		return Clean(fmt.Sprintf("%s%s %s is refused (%s). %s. %s", filePermissionsDenialPrefix, opWords(r.Op), r.Path, r.Code,
			strings.TrimSuffix(r.Reason, "."), Advice(mountpoint, r)))
	}
	return Clean(fmt.Sprintf("%s%s %s is refused (%s). %s. %s", policyDenialPrefix, opWords(r.Op), r.Path, r.Code,
		strings.TrimSuffix(r.Reason, "."), Advice(mountpoint, r)))
}

// opWords says what an operation of the check protocol does to a file.
func opWords(op string) string {
	switch op {
	case "create", "mknod":
		return "creating"
	case "open_write", "fallocate":
		return "writing"
	case "truncate":
		return "truncating"
	case "chmod", "chown", "utimes", "setxattr", "removexattr":
		return "changing the attributes of"
	case "mkdir":
		return "creating the directory"
	case "symlink":
		return "creating the symlink"
	case "unlink":
		return "deleting"
	case "rmdir":
		return "removing the directory"
	}
	return "changing"
}
