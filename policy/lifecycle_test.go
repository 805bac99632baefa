package policy

import (
	"strings"
	"testing"
)

func TestTransitions(t *testing.T) {
	allowed := map[[2]Status]bool{
		{StatusPending, StatusInProgress}:  true,
		{StatusPending, StatusArchived}:    true,
		{StatusInProgress, StatusComplete}: true,
		{StatusInProgress, StatusBlocked}:  true,
		{StatusInProgress, StatusArchived}: true,
		{StatusBlocked, StatusInProgress}:  true,
		{StatusBlocked, StatusArchived}:    true,
		{StatusComplete, StatusArchived}:   true,
	}
	// Every pair, allowed and prohibited.
	for _, from := range Statuses() {
		for _, to := range Statuses() {
			err := CheckTransition("INT-001", from, to)
			if want := allowed[[2]Status{from, to}]; (err == nil) != want {
				t.Errorf("%s → %s: err = %v, want allowed=%v", from, to, err, want)
			}
			if err != nil && from != StatusArchived {
				for _, a := range AllowedTransitions(from) {
					if !strings.Contains(err.Error(), string(a)) {
						t.Errorf("%s → %s: message %q does not name allowed %s", from, to, err, a)
					}
				}
			}
		}
	}
	if err := CheckTransition("INT-001", StatusArchived, StatusPending); err == nil || !strings.Contains(err.Error(), "final") {
		t.Errorf("archived: %v", err)
	}
	if err := CheckTransition("INT-001", StatusPending, "DONE"); err == nil || !strings.Contains(err.Error(), "not a status") {
		t.Errorf("bogus status: %v", err)
	}
}
