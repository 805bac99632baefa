package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// terminal gives a session a pseudo-terminal of its own when intentfs run
// is started from one. Sharing the caller's terminal would let the agent
// push input into it (TIOCSTI), which the human's shell, outside any
// session, reads and runs once the session ends; and it would let the
// agent read the human's keystrokes after it. The caller's terminal is put
// in raw mode and its bytes are relayed to and from the session's.
type terminal struct {
	caller int // the caller's terminal (fd 0)
	saved  *unix.Termios
	master *os.File
	slave  *os.File
	copied sync.WaitGroup
}

// openTerminal makes a pseudo-terminal for a session whose caller's fd 0
// is a terminal, sized like it.
func openTerminal() (*terminal, error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	master := os.NewFile(uintptr(mfd), "ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("unlocking the pseudo-terminal: %w", err)
	}
	// TIOCGPTPEER opens the very peer of this master, never a path that
	// could name another.
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		master.Close()
		return nil, fmt.Errorf("opening the pseudo-terminal's peer: %w", errno)
	}
	t := &terminal{caller: 0, master: master, slave: os.NewFile(sfd, "pts")}
	t.resize()
	return t, nil
}

// resize gives the session's terminal the caller's size.
func (t *terminal) resize() {
	if ws, err := unix.IoctlGetWinsize(t.caller, unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// start puts the caller's terminal in raw mode (the session's terminal
// does the line editing and turns ^C into a signal) and relays bytes
// both ways. The slave end must be closed in this process once the
// session has it.
func (t *terminal) start(stdin io.Reader, stdout io.Writer) error {
	saved, err := unix.IoctlGetTermios(t.caller, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("reading the terminal's mode: %w", err)
	}
	raw := *saved
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(t.caller, unix.TCSETS, &raw); err != nil {
		return fmt.Errorf("setting the terminal's mode: %w", err)
	}
	t.saved = saved
	// Input: stops when the session ends (the master is closed then).
	go func() { _, _ = io.Copy(t.master, stdin) }()
	// Output: until every holder of the slave has closed it (EIO).
	t.copied.Add(1)
	go func() {
		defer t.copied.Done()
		_, err := io.Copy(stdout, t.master)
		var pe *os.PathError
		if err != nil && !(errors.As(err, &pe) && errors.Is(pe.Err, unix.EIO)) {
			fmt.Fprintf(os.Stderr, "intentfs run: relaying the session's output: %v\n", err)
		}
	}()
	return nil
}

// finish waits for the session's last output and gives the caller its
// terminal back as it was.
func (t *terminal) finish() {
	t.copied.Wait()
	t.master.Close()
	if t.saved != nil {
		_ = unix.IoctlSetTermios(t.caller, unix.TCSETS, t.saved)
	}
}
