package testenv

import (
	"encoding/json"

	"github.com/intentfs/intentfs/internal/approvals"
)

// PendingOf lists what waits, through the CLI.
func (c *CLI) PendingOf(ws string) []approvals.Pending {
	c.t.Helper()
	var out struct {
		Pending []approvals.Pending `json:"pending"`
	}
	if err := json.Unmarshal([]byte(c.Must("approvals", "--json", "--mount", ws)), &out); err != nil {
		c.t.Fatal(err)
	}
	return out.Pending
}

// WaitPending waits until exactly one entry waits, and returns it.
func (c *CLI) WaitPending(ws string) approvals.Pending {
	c.t.Helper()
	var p []approvals.Pending
	WaitFor(c.t, func() bool { p = c.PendingOf(ws); return len(p) == 1 }, "one held change")
	return p[0]
}
