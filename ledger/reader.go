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

// ScanFile calls fn with the raw bytes (no newline) and 1-based number of
// every line of one ledger file. It streams: memory stays flat however
// long the file is. The bytes are only valid during the call.
func ScanFile(path string, fn func(line int, raw []byte) error) error {
	f, err := openRead(path)
	if err != nil {
		return fmt.Errorf("opening ledger: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		b, err := readLine(br)
		if errors.Is(err, io.EOF) && len(b) == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := fn(line, b); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
}

// ScanRaw is ScanFile across every file of the ledger at path (rotated
// files first), naming the file of each line.
func ScanRaw(path string, fn func(file string, line int, raw []byte) error) error {
	files, err := Files(path)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("opening ledger: %w", os.ErrNotExist)
	}
	for _, f := range files {
		if err := ScanFile(f, func(line int, raw []byte) error { return fn(f, line, raw) }); err != nil {
			return err
		}
	}
	return nil
}

// Scan calls fn for every record of the ledger at path, across its
// rotated files, in order. A line that is not a record stops the scan
// with an error naming its file and line.
func Scan(path string, fn func(line int, r *Record) error) error {
	return ScanRaw(path, func(file string, line int, raw []byte) error {
		if len(raw) == 0 {
			return nil
		}
		var r Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s:%d: not a ledger record: %w", file, line, err)
		}
		return fn(line, &r)
	})
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > MaxLineBytes {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			out = append(out, chunk...)
			continue
		}
		if out == nil {
			out = chunk // no copy in the common case
		} else {
			out = append(out, chunk...)
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
