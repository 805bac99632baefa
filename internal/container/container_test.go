package container

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFinishDoesNotHideALedgerFailure: a command that succeeded but whose
// changes may not all be recorded (the unmount or the ledger's flush
// failed) must not make the container exit 0.
func TestFinishDoesNotHideALedgerFailure(t *testing.T) {
	ledgerErr := errors.New("write agent_trace.jsonl: no space left on device")
	tests := []struct {
		name                     string
		code                     int
		runErr, unmount, closing error
		want                     int
		wantErr                  string
	}{
		{"clean", 0, nil, nil, nil, 0, ""},
		{"clean, the command failed", 3, nil, nil, nil, 3, ""},
		{"the ledger failed, the command succeeded", 0, nil, nil, ledgerErr, ExitCannotRun, "no space left on device"},
		{"the ledger failed, the command failed", 3, nil, nil, ledgerErr, 3, "flushing and closing the ledger"},
		{"the unmount failed", 0, nil, errors.New("/workspace is busy"), nil, ExitCannotRun, "unmounting /workspace"},
		{"the command never ran and the unmount failed", ExitCannotRun, errors.New("refused"), errors.New("busy"), nil, ExitCannotRun, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, err := finish(tt.code, tt.runErr, tt.unmount, tt.closing, "/workspace")
			if code != tt.want {
				t.Errorf("status %d, want %d", code, tt.want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

// TestEndAfterGrace: after SIGTERM the session is ended once the grace
// is up, not before, and not at all if the command exits in time.
func TestEndAfterGrace(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("the command ignores SIGTERM", func(t *testing.T) {
		terminated, launched := make(chan struct{}), make(chan struct{})
		var ended atomic.Int32
		done := make(chan struct{})
		go func() {
			endAfterGrace(terminated, launched, 200*time.Millisecond, func() int { ended.Add(1); return 1 }, log)
			close(done)
		}()
		start := time.Now()
		close(terminated)
		<-done
		if ended.Load() != 1 {
			t.Fatalf("the session was ended %d times, want once", ended.Load())
		}
		if el := time.Since(start); el < 200*time.Millisecond {
			t.Errorf("the session was ended after %v, before the grace of 200ms", el)
		}
	})
	t.Run("the command exits in time", func(t *testing.T) {
		terminated, launched := make(chan struct{}), make(chan struct{})
		var ended atomic.Int32
		done := make(chan struct{})
		go func() {
			endAfterGrace(terminated, launched, time.Hour, func() int { ended.Add(1); return 1 }, log)
			close(done)
		}()
		close(terminated)
		close(launched)
		<-done
		if ended.Load() != 0 {
			t.Fatal("the session was ended although the command exited")
		}
	})
	t.Run("no SIGTERM", func(t *testing.T) {
		launched := make(chan struct{})
		close(launched)
		endAfterGrace(make(chan struct{}), launched, time.Nanosecond, func() int { t.Error("ended without SIGTERM"); return 0 }, log)
	})
}
