package uring

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func newRing(t *testing.T, entries, flags uint32) *Ring {
	t.Helper()
	r, err := New(entries, flags)
	if err != nil {
		t.Fatalf("New(%d, %#x): %v", entries, flags, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestNopRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags uint32
	}{
		{"plain", 0},
		{"sqe128", SetupSQE128},
		{"sqe128+cqe32", SetupSQE128 | SetupCQE32},
		{"coop-taskrun", SetupCoopTaskrun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(t, 4, tc.flags)
			// More rounds than entries: the queues wrap.
			for round := range 10 {
				for i := range 3 {
					sqe, err := r.Next()
					if err != nil {
						t.Fatal(err)
					}
					sqe.Opcode = OpNop
					sqe.UserData = uint64(round*100 + i)
				}
				if n, err := r.Submit(3); err != nil || n != 3 {
					t.Fatalf("Submit = %d, %v; want 3", n, err)
				}
				for i := range 3 {
					c, err := r.Wait()
					if err != nil {
						t.Fatal(err)
					}
					if c.UserData != uint64(round*100+i) || c.Res != 0 || c.Big != [2]uint64{} {
						t.Fatalf("completion %+v, want user data %d, result 0", c, round*100+i)
					}
				}
				if c, ok := r.Peek(); ok {
					t.Fatalf("unexpected completion %+v", c)
				}
			}
		})
	}
}

func TestFullQueue(t *testing.T) {
	r := newRing(t, 2, 0)
	for range 2 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Next(); !errors.Is(err, ErrSQFull) {
		t.Fatalf("third entry on a 2-entry ring: %v, want ErrSQFull", err)
	}
	if _, err := r.Submit(2); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Next(); err != nil {
		t.Fatalf("after the kernel took the entries: %v", err)
	}
}

// TestReadWaitsForData shows a completion arriving later than its
// submission: a read of an empty pipe completes once data is written.
func TestReadWaitsForData(t *testing.T) {
	r := newRing(t, 4, SetupSQE128)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	buf := make([]byte, 16)
	sqe, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	sqe.Opcode, sqe.Fd = OpRead, int32(p[0])
	sqe.Addr, sqe.Len, sqe.Off = uint64(uintptr(unsafe.Pointer(&buf[0]))), uint32(len(buf)), ^uint64(0)
	sqe.UserData = 7
	if _, err := r.Submit(0); err != nil {
		t.Fatal(err)
	}
	if c, ok := r.Peek(); ok {
		t.Fatalf("read of an empty pipe completed: %+v", c)
	}
	if _, err := unix.Write(p[1], []byte("hello")); err != nil {
		t.Fatal(err)
	}
	c, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if c.UserData != 7 || c.Res != 5 || string(buf[:5]) != "hello" {
		t.Fatalf("completion %+v, buffer %q; want 5 bytes \"hello\"", c, buf[:5])
	}
}

func TestCmdArea(t *testing.T) {
	plain := newRing(t, 2, 0)
	sqe, _ := plain.Next()
	if plain.Cmd(sqe) != nil {
		t.Error("a 64-byte entry has no command area")
	}
	big := newRing(t, 2, SetupSQE128)
	sqe, _ = big.Next()
	cmd := big.Cmd(sqe)
	if len(cmd) != 80 {
		t.Fatalf("command area of %d bytes, want 80", len(cmd))
	}
	cmd[0] = 0xAB
	if sqe.Addr3 != 0xAB {
		t.Errorf("the command area does not start at byte 48 (addr3 = %#x)", sqe.Addr3)
	}
}

// TestURingCmdOnAFileWithoutOne: a descriptor whose driver has no
// uring_cmd fails the command in its completion, not in io_uring_enter.
func TestURingCmdOnAFileWithoutOne(t *testing.T) {
	r := newRing(t, 2, SetupSQE128)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	sqe, _ := r.Next()
	sqe.Opcode, sqe.Fd, sqe.UserData = OpURingCmd, int32(p[0]), 9
	if _, err := r.Submit(1); err != nil {
		t.Fatal(err)
	}
	c, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if c.UserData != 9 || c.Res != -int32(unix.EOPNOTSUPP) {
		t.Fatalf("completion %+v, want result -EOPNOTSUPP", c)
	}
}

func TestSupports(t *testing.T) {
	r := newRing(t, 2, 0)
	for _, tc := range []struct {
		op   uint8
		want bool
	}{{OpNop, true}, {OpRead, true}, {OpURingCmd, true}, {255, false}} {
		got, err := r.Supports(tc.op)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Supports(%d) = %v, want %v", tc.op, got, tc.want)
		}
	}
}

func TestCloseTwice(t *testing.T) {
	r, err := New(2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestDropFd: a ring registered with its thread works without a
// descriptor: the process's table is back to what it was, NOPs still
// round-trip, and Close releases it.
func TestDropFd(t *testing.T) {
	runtime.LockOSThread() // the registered ring belongs to this thread
	defer runtime.UnlockOSThread()
	before := countFds(t)
	r, err := New(4, SetupSQE128|SetupSingleIssuer)
	if err != nil {
		t.Fatal(err)
	}
	if got := countFds(t); got != before+1 {
		t.Fatalf("a new ring: %d descriptors, want %d", got, before+1)
	}
	if err := r.DropFd(); err != nil {
		t.Fatal(err)
	}
	if got := countFds(t); got != before {
		t.Fatalf("after DropFd: %d descriptors, want %d", got, before)
	}
	if r.Fd() != -1 {
		t.Fatalf("Fd after DropFd = %d, want -1", r.Fd())
	}
	for i := range 6 { // more than the ring holds: it wraps
		sqe, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		sqe.Opcode = OpNop
		sqe.UserData = uint64(i)
		if _, err := r.Submit(1); err != nil {
			t.Fatal(err)
		}
		c, err := r.Wait()
		if err != nil || c.UserData != uint64(i) || c.Res != 0 {
			t.Fatalf("NOP %d on the registered ring: %+v, %v", i, c, err)
		}
	}
	if ok, err := r.Supports(OpURingCmd); err != nil || !ok {
		t.Fatalf("Supports on the registered ring: %v, %v", ok, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func countFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
