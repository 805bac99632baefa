package fsnode

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestWaitForLock: a blocking lock is taken once it is free, ends with
// EINTR when the caller is interrupted while another holds it, and
// passes any other answer on.
func TestWaitForLock(t *testing.T) {
	tests := []struct {
		name    string
		answers []syscall.Errno // what each try returns; the last repeats
		cancel  time.Duration   // 0: never
		want    syscall.Errno
		tries   int // at least
	}{
		{"free", []syscall.Errno{0}, 0, 0, 1},
		{"freed after a while", []syscall.Errno{syscall.EWOULDBLOCK, syscall.EWOULDBLOCK, syscall.EAGAIN, 0}, 0, 0, 4},
		{"held until interrupted", []syscall.Errno{syscall.EWOULDBLOCK}, 150 * time.Millisecond, syscall.EINTR, 3},
		{"fcntl lock held until interrupted", []syscall.Errno{syscall.EACCES}, 100 * time.Millisecond, syscall.EINTR, 3},
		{"other error", []syscall.Errno{syscall.EBADF}, 0, syscall.EBADF, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.cancel)
				defer cancel()
			}
			n := 0
			start := time.Now()
			got := waitForLock(ctx, func() syscall.Errno {
				a := tt.answers[min(n, len(tt.answers)-1)]
				n++
				return a
			})
			if got != tt.want || n < tt.tries {
				t.Fatalf("waitForLock = %v after %d tries, want %v after at least %d", got, n, tt.want, tt.tries)
			}
			if tt.cancel > 0 && time.Since(start) > tt.cancel+time.Second {
				t.Fatalf("the interrupt ended the wait only after %v", time.Since(start))
			}
		})
	}
}
