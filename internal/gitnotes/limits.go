package gitnotes

import (
	"fmt"
	"os"
	"strconv"
)

// Anyone who can write refs/notes/intentfs (the agent, in a mount) decides
// what the notes hold, and every reader — the daemon's sync, check and
// verify on any clone — takes them into memory record by record. So what
// a reader takes is capped: a note over a cap is skipped whole, before a
// line of it is decoded, and reported with the cap and how to raise it.
const (
	// DefaultMaxNoteRecords caps the records of one note.
	DefaultMaxNoteRecords = 100_000
	// DefaultMaxRecords caps the records of all notes together.
	DefaultMaxRecords = 500_000
	// DefaultMaxBytes caps the bytes of all notes together (and so of
	// any one).
	DefaultMaxBytes int64 = 256 << 20
)

// The environment variables that raise (or lower) the caps.
const (
	EnvMaxNoteRecords = "INTENTFS_NOTES_MAX_NOTE_RECORDS"
	EnvMaxRecords     = "INTENTFS_NOTES_MAX_RECORDS"
	EnvMaxBytes       = "INTENTFS_NOTES_MAX_BYTES"
)

// Limits caps what a reader of the notes takes.
type Limits struct {
	NoteRecords int
	Records     int
	Bytes       int64
}

// DefaultLimits are the caps, as the environment sets them (a value that
// is not a positive integer leaves the default).
func DefaultLimits() Limits {
	l := Limits{NoteRecords: DefaultMaxNoteRecords, Records: DefaultMaxRecords, Bytes: DefaultMaxBytes}
	if n, ok := positiveEnv(EnvMaxNoteRecords); ok {
		l.NoteRecords = int(n)
	}
	if n, ok := positiveEnv(EnvMaxRecords); ok {
		l.Records = int(n)
	}
	if n, ok := positiveEnv(EnvMaxBytes); ok {
		l.Bytes = n
	}
	return l
}

func positiveEnv(name string) (int64, bool) {
	n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n, err == nil && n > 0
}

// budget is what is left of the caps while the notes are read.
type budget struct {
	lim     Limits
	records int
	bytes   int64
}

// admitRecords says why a note of n lines is not read, or "", and takes
// its share of the budget when it is.
func (b *budget) admitRecords(size int64, n int) string {
	if n > b.lim.NoteRecords {
		return fmt.Sprintf("skipped: the note holds %d lines, more than the %d records a note may hold (the cap; raise it with %s=N)", n, b.lim.NoteRecords, EnvMaxNoteRecords)
	}
	if b.records+n > b.lim.Records {
		return fmt.Sprintf("skipped: its %d lines would take the notes read past %d records (the cap; raise it with %s=N)", n, b.lim.Records, EnvMaxRecords)
	}
	b.records += n
	b.bytes += size
	return ""
}
