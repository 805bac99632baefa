package main

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/control"
)

// TestIntentLineNamesTheSessionsIntents: docker exec ... intentfs status
// reads the mount from outside the agent's session; "none (governed
// changes are denied)" while the agent's session is pinned to an intent
// would say the agent can change nothing.
func TestIntentLineNamesTheSessionsIntents(t *testing.T) {
	pinned := control.SessionInfo{ID: "s1", SessionSpec: control.SessionSpec{Pinned: true}, Intent: "INT-001", Live: true}
	ended := control.SessionInfo{ID: "s0", Intent: "INT-009"}
	tests := []struct {
		name string
		st   control.Status
		want string
	}{
		{"nothing", control.Status{}, "none (governed changes are denied)"},
		{"an ended session only", control.Status{Sessions: []control.SessionInfo{ended}}, "none (governed changes are denied)"},
		{"the mount's intent", control.Status{ActiveIntent: "INT-002", IntentName: "api", IntentStatus: "IN_PROGRESS"}, `INT-002 "api" (IN_PROGRESS)`},
		{"a pinned session", control.Status{Sessions: []control.SessionInfo{pinned, ended}},
			"none for processes outside sessions; 1 session with its own: INT-001 (pinned)"},
		{"two sessions", control.Status{ActiveIntent: "INT-002", IntentName: "api", IntentStatus: "IN_PROGRESS",
			Sessions: []control.SessionInfo{pinned, {ID: "s2", Live: true}}},
			`INT-002 "api" (IN_PROGRESS) for processes outside sessions; 2 sessions with their own: INT-001 (pinned), none`},
		{"read in a session", control.Status{ActiveIntent: "INT-001", IntentName: "api", IntentStatus: "IN_PROGRESS", Session: &pinned},
			`INT-001 "api" (IN_PROGRESS) (this session's)`},
	}
	for _, tt := range tests {
		if got := intentLine(&tt.st); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestInitNextInTheImage: in the container image init's next step is to
// start the image again, not intentfs mount of a path inside a container
// that has exited.
func TestInitNextInTheImage(t *testing.T) {
	if got := initNext("/src", "", false); !strings.Contains(got, "intentfs doctor --source /src --agent agent && sudo intentfs mount /src MOUNTPOINT") {
		t.Errorf("outside the image: %q", got)
	}
	got := initNext("/src", "start the container again", false)
	if strings.Contains(got, "intentfs mount") || strings.Contains(got, "/src") || !strings.Contains(got, "then: start the container again") {
		t.Errorf("in the image: %q", got)
	}
}

func TestGitFailure(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"fetching refs/heads/main from the upstream /x: git fetch ...: fatal: detected dubious ownership in repository at '/x'\nTo add an exception for this directory, call:\n\n\tgit config --global --add safe.directory /x\nfatal: Could not read from remote repository.",
			"fatal: detected dubious ownership in repository at '/x'; fatal: Could not read from remote repository."},
		{"the upstream has not been fetched yet", "the upstream has not been fetched yet"},
		{"first line\nsecond", "first line"},
	} {
		if got := gitFailure(tc.in); got != tc.want {
			t.Errorf("gitFailure(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestStatusShowsFilePermissions: a refusal by the source's own mode is
// never a denial, so the status names it apart.
func TestStatusShowsFilePermissions(t *testing.T) {
	var out strings.Builder
	a := &app{stdout: &out}
	printStatus(a, &control.Status{FilePermissions: []control.PermissionProblem{{Session: "s1", Uid: 1000, Intent: "INT-001", Path: "src",
		Reason: "src belongs to root:root 0755; uid 1000 may not create files in it"}}})
	for _, w := range []string{"not policy denials", "session s1, uid 1000, INT-001: src belongs to root:root 0755; uid 1000 may not create files in it", "denials:    none"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("status lacks %q:\n%s", w, out.String())
		}
	}
}

// TestStatusShowsEachIntentsEnforcement: the workspace's default mode and
// that of each intent in progress, so an intent in observe mode is not
// read as enforced when no intent is selected.
func TestStatusShowsEachIntentsEnforcement(t *testing.T) {
	var out strings.Builder
	a := &app{stdout: &out}
	printStatus(a, &control.Status{Enforcement: "enforce", WorkspaceEnforcement: "enforce", IntentEnforcement: []control.IntentEnforcement{
		{ID: "INT-001", Status: "IN_PROGRESS", Enforcement: "observe"}, {ID: "INT-002", Status: "IN_PROGRESS", Enforcement: "enforce"},
		{ID: "INT-003", Status: "COMPLETE", Enforcement: "observe"}}})
	want := "enforcement: workspace default enforce; in progress: INT-001 observe, INT-002 enforce\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, out.String())
	}
}
