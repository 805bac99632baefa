package ledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes bounds one ledger line; a longer line is reported, not read.
const MaxLineBytes = 16 << 20

// Scan calls fn for every record of the ledger at path, in order, with its
// 1-based line number. It streams: memory stays flat however long the
// ledger is. A line that is not a record stops the scan with an error that
// names the line.
func Scan(path string, fn func(line int, r *Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening ledger: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	for line := 1; ; line++ {
		b, err := readLine(br)
		if errors.Is(err, io.EOF) && len(b) == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(b) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s:%d: not a ledger record: %w", path, line, err)
		}
		if err := fn(line, &r); err != nil {
			return err
		}
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > MaxLineBytes {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		}
		out = append(out, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(out) > 0 && out[len(out)-1] == '\n' {
			out = out[:len(out)-1]
		}
		return out, err
	}
}

// Tail returns the last n records of the ledger that keep returns true for,
// oldest first.
func Tail(path string, n int, keep func(*Record) bool) ([]*Record, error) {
	if n <= 0 {
		return nil, nil
	}
	ring := make([]*Record, 0, n)
	start := 0
	err := Scan(path, func(_ int, r *Record) error {
		if keep != nil && !keep(r) {
			return nil
		}
		if len(ring) < n {
			ring = append(ring, r)
		} else {
			ring[start] = r
			start = (start + 1) % n
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return append(ring[start:], ring[:start]...), err
}
