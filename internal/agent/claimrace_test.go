package agent

import (
	"testing"
	"time"
)

// StartSession claims the intent after Start; if the session's root
// process dies in between, the watcher ends the session (releasing the
// claims it had: none yet) and Claim then records the ended session as
// the intent's holder, for good: nothing releases it again.
func TestClaimByAnEndedSessionIsRefused(t *testing.T) {
	ended := make(chan *Session, 1)
	r, err := NewSessions(nil, func(s *Session) { ended <- s })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	root := startInPidNS(t, "sleep 30")
	s, err := r.Start(Spec{Name: "short", User: "u", RootPid: root.Process.Pid, Intent: "INT-001", Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	// The root dies before the daemon gets to claim.
	_ = root.Process.Kill()
	_ = root.Wait()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
	if err := r.Claim(s, "INT-001", false); err == nil {
		t.Errorf("an ended session claimed INT-001")
	}
	if h := r.Holder("INT-001"); h != nil {
		t.Errorf("INT-001 is held by ended session %s", h.ID())
	}
}
