package fsnode_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
)

// TestCachedAppendLandsAtTheSourceEnd: on the cached data path the
// kernel computes an O_APPEND write's offset from the size it keeps,
// which a change made directly in the source has made stale. A WRITE the
// caller made through an O_APPEND descriptor lands at the source's real
// end (each request of a write(2) after the one before), and the record
// describes what the source went through; a plain write stays at the
// kernel's offset.
func TestCachedAppendLandsAtTheSourceEnd(t *testing.T) {
	const seed, human = "seed\n", "by the human\n"
	stale := uint64(len(seed)) // the size the kernel knew before the human's append
	tests := []struct {
		name   string
		flags  uint32
		writev bool     // the request is sent as go-fuse's server sends it: WRITEV first
		writes []string // one request each, at the kernel's offsets from stale on
		want   string
	}{
		{"append", syscall.O_WRONLY | syscall.O_APPEND, false, []string{"by the agent\n"}, seed + human + "by the agent\n"},
		{"append in pieces", syscall.O_WRONLY | syscall.O_APPEND, true, []string{"by the agent\n"}, seed + human + "by the agent\n"},
		{"append of several requests", syscall.O_RDWR | syscall.O_APPEND, false, []string{"one\n", "two\n", "three\n"}, seed + human + "one\ntwo\nthree\n"},
		// A write at an offset the caller chose goes where it says: the
		// kernel's offset is the caller's.
		{"plain write", syscall.O_WRONLY, false, []string{"by the agent\n"}, seed + "by the agent\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newCachedKernel(t, map[string]string{"src/log.txt": seed})
			id := k.mustNode("src/log.txt")
			if got, st := k.readAt("src/log.txt"); st != fuse.OK || got != seed {
				t.Fatalf("read %q, %v", got, st)
			}
			f, err := os.OpenFile(filepath.Join(k.src, "src/log.txt"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteString(human)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			off := stale
			for _, data := range tt.writes {
				// go-fuse makes a cancel channel for each request.
				cancel := make(chan struct{})
				in := fuse.WriteIn{InHeader: k.header(id), Offset: off, Size: uint32(len(data)), Flags: tt.flags}
				var n uint32
				var st fuse.Status
				if tt.writev {
					half := len(data) / 2
					n, st = k.raw.Writev(cancel, &in, [][]byte{[]byte(data[:half]), []byte(data[half:])})
					if st == fuse.ENOSYS {
						// As go-fuse's server does: the data copied
						// into one piece, for Write.
						n, st = k.raw.Write(cancel, &in, []byte(data))
					}
				} else {
					n, st = k.raw.Write(cancel, &in, []byte(data))
				}
				if st != fuse.OK || int(n) != len(data) {
					t.Fatalf("write %q at %d: %d, %v", data, off, n, st)
				}
				off += uint64(len(data))
			}
			if got, _ := k.onDisk("src/log.txt"); got != tt.want {
				t.Fatalf("the source holds %q, want %q", got, tt.want)
			}
			k.root.SettleWrites()
			recs := k.waitRecords(1)
			r := recs[0]
			if r.Event != ledger.EventWrite || r.PreHash != sha(seed+human) || r.PostHash != sha(tt.want) {
				t.Fatalf("record %+v: want a write from %s to %s", r, sha(seed+human), sha(tt.want))
			}
		})
	}
}

// TestCachedAppendWithoutRequestChannel: a request go-fuse gave no cancel
// channel cannot be told apart from another in flight, so it is not taken
// for an append: it writes at the kernel's offset, as any write.
func TestCachedAppendWithoutRequestChannel(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/log.txt": "seed\n"})
	id := k.mustNode("src/log.txt")
	in := fuse.WriteIn{InHeader: k.header(id), Offset: 2, Size: 2, Flags: syscall.O_WRONLY | syscall.O_APPEND}
	if n, st := k.raw.Write(nil, &in, []byte("XX")); st != fuse.OK || n != 2 {
		t.Fatalf("write: %d, %v", n, st)
	}
	if got, _ := k.onDisk("src/log.txt"); got != "seXX\n" {
		t.Fatalf("the source holds %q, want the write at the kernel's offset", got)
	}
}
