package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
)

// readOp reads one control request from c and reports its op on asked.
func readOp(c net.Conn, asked chan<- string) {
	line, _ := bufio.NewReader(c).ReadString('\n')
	var req control.Request
	_ = json.Unmarshal([]byte(line), &req)
	asked <- req.Op
}

// TestSettle: a command that reads the ledger asks the mount's daemon to
// settle; a daemon that answers is waited for, one that fails is named
// with its error, one that never answers costs the command no more than
// the bound and is named, and one that is gone, or too old to know the
// request, is passed over in silence.
func TestSettle(t *testing.T) {
	tests := []struct {
		name       string
		serve      func(c net.Conn, asked chan<- string, release <-chan struct{})
		wantStderr string
	}{
		{"answers", func(c net.Conn, asked chan<- string, _ <-chan struct{}) {
			readOp(c, asked)
			_ = json.NewEncoder(c).Encode(control.Response{OK: true})
		}, ""},
		{"fails", func(c net.Conn, asked chan<- string, _ <-chan struct{}) {
			readOp(c, asked)
			_ = json.NewEncoder(c).Encode(control.Response{Error: "ledger: no space left on device"})
		}, "could not record its pending writes (ledger: no space left on device)"},
		{"older daemon", func(c net.Conn, asked chan<- string, _ <-chan struct{}) {
			readOp(c, asked)
			_ = json.NewEncoder(c).Encode(control.Response{Error: `unknown request "settle"`})
		}, ""},
		{"never answers", func(c net.Conn, asked chan<- string, release <-chan struct{}) {
			readOp(c, asked)
			<-release // holds the connection open, unanswered, until settle has given up
		}, "did not record its pending writes within 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "ctl.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			asked, release := make(chan string, 1), make(chan struct{})
			defer close(release)
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				tt.serve(c, asked, release)
			}()
			var stderr bytes.Buffer
			ws := cliWorkspace{source: "/src", mount: &mounts.Entry{Mountpoint: "/ws", Socket: sock}}
			start := time.Now()
			ws.settleWithin(&app{stderr: &stderr}, 200*time.Millisecond)
			if took := time.Since(start); took > 1500*time.Millisecond {
				t.Errorf("settle took %s, bound 200ms", took)
			}
			if op := <-asked; op != "settle" {
				t.Errorf("asked %q, want settle", op)
			}
			if got := stderr.String(); tt.wantStderr == "" && got != "" || !strings.Contains(got, tt.wantStderr) {
				t.Errorf("stderr %q, want %q", got, tt.wantStderr)
			}
		})
	}
	t.Run("daemon gone", func(t *testing.T) {
		var stderr bytes.Buffer
		ws := cliWorkspace{source: "/src", mount: &mounts.Entry{Mountpoint: "/ws", Socket: filepath.Join(t.TempDir(), "none.sock")}}
		ws.settleWithin(&app{stderr: &stderr}, 200*time.Millisecond)
		if stderr.Len() != 0 {
			t.Errorf("stderr %q for a daemon gone", stderr.String())
		}
	})
}
