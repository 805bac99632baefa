package webui

import (
	"bufio"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"

	"github.com/intentfs/intentfs/control"
)

// TestLocalSettlesBeforeReadingTheLedger: the page's diff, blame and
// verify each ask the mount's daemon to record what is pending before
// they read the ledger file.
func TestLocalSettlesBeforeReadingTheLedger(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ops := make(chan string, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var req control.Request
			if line, err := bufio.NewReader(c).ReadBytes('\n'); err == nil {
				_ = json.Unmarshal(line, &req)
			}
			ops <- req.Op
			_ = json.NewEncoder(c).Encode(control.Response{OK: true})
			c.Close()
		}
	}()
	m := Mount{Mountpoint: "/ws", Source: t.TempDir(), Socket: sock}
	reads := []struct {
		name string
		read func()
	}{
		{"diff", func() { _, _ = Local{}.IntentDiff(m, "INT-001") }},
		{"blame", func() { _, _ = Local{}.Blame(m, "src/a.go") }},
		{"verify", func() { Local{}.Verify(m) }},
	}
	for _, r := range reads {
		r.read()
		select {
		case op := <-ops:
			if op != "settle" {
				t.Errorf("%s asked the daemon %q, want settle", r.name, op)
			}
		default:
			t.Errorf("%s read the ledger without asking the daemon to settle", r.name)
		}
	}
}
