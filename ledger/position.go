package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Position is where a line of a ledger starts: its file, named by device
// and inode (which survive the rename that rotates a file), the byte
// offset in it and the line's number. A long-lived reader keeps one to
// read only what was appended since (ScanRawFrom).
type Position struct {
	Dev, Ino uint64
	Offset   int64
	Line     int
}

// IsZero reports whether p is the zero Position: the ledger's start.
func (p Position) IsZero() bool { return p == Position{} }

// ScanRawFrom is ScanRaw starting at the line at from (the zero Position:
// the first line), calling fn with each line's position. When from names
// no file of the ledger any more (the ledger was replaced), it returns
// found false and scans nothing: the caller starts over. end is the
// position after the last whole line read, where a later scan resumes; a
// last line without its newline (still being written) is neither read
// nor passed.
func ScanRawFrom(path string, from Position, fn func(file string, pos Position, raw []byte) error) (end Position, found bool, err error) {
	files, err := Files(path)
	if err != nil {
		return from, false, err
	}
	if len(files) == 0 {
		return from, false, fmt.Errorf("opening ledger: %w", os.ErrNotExist)
	}
	started := from.IsZero()
	end = from
	for _, name := range files {
		f, err := openRead(name)
		if err != nil {
			return end, started, fmt.Errorf("opening ledger: %w", err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			f.Close()
			return end, started, fmt.Errorf("%s: %w", name, err)
		}
		pos := Position{Dev: uint64(st.Dev), Ino: st.Ino, Line: 1}
		if !started {
			if pos.Dev != from.Dev || pos.Ino != from.Ino {
				f.Close()
				continue
			}
			if from.Offset > st.Size {
				f.Close()
				return from, false, nil // truncated: not the file it was
			}
			started = true
			pos = from
			if _, err := f.Seek(from.Offset, io.SeekStart); err != nil {
				f.Close()
				return end, true, fmt.Errorf("%s: %w", name, err)
			}
		}
		end, err = scanLinesFrom(f, name, pos, fn)
		f.Close()
		if err != nil {
			return end, true, err
		}
	}
	return end, started, nil
}

// scanLinesFrom reads whole lines of f from pos on.
func scanLinesFrom(f *os.File, name string, pos Position, fn func(file string, pos Position, raw []byte) error) (Position, error) {
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		b, err := readLine(br)
		if errors.Is(err, io.EOF) {
			// Nothing, or a line without its newline yet.
			return pos, nil
		}
		if err != nil {
			return pos, fmt.Errorf("%s:%d: %w", name, pos.Line, err)
		}
		if err := fn(name, pos, b); err != nil {
			if errors.Is(err, errStop) {
				return pos, nil
			}
			return pos, err
		}
		pos.Offset += int64(len(b)) + 1
		pos.Line++
	}
}
