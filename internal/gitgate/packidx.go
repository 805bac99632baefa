package gitgate

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
)

// idxHasObject reports whether a pack index (version 2) lists oid: the
// fan-out table narrows the sorted names to those with oid's first byte,
// and a binary search finds it.
func idxHasObject(idx []byte, oid string) (bool, error) {
	want, err := hex.DecodeString(oid)
	if err != nil {
		return false, fmt.Errorf("object id %q: %w", oid, err)
	}
	const hdr = 8
	if len(idx) < hdr+256*4 || !bytes.Equal(idx[:4], []byte{0xff, 't', 'O', 'c'}) || binary.BigEndian.Uint32(idx[4:8]) != 2 {
		return false, fmt.Errorf("not a version 2 pack index")
	}
	fan := func(i int) int { return int(binary.BigEndian.Uint32(idx[hdr+i*4:])) }
	n := fan(255)
	size := len(want)
	names := idx[hdr+256*4:]
	if len(names) < n*size {
		return false, fmt.Errorf("pack index is truncated")
	}
	lo := 0
	if want[0] > 0 {
		lo = fan(int(want[0]) - 1)
	}
	hi := fan(int(want[0]))
	if lo > hi || hi > n {
		return false, fmt.Errorf("pack index fan-out is corrupt")
	}
	i := lo + sort.Search(hi-lo, func(k int) bool {
		return bytes.Compare(names[(lo+k)*size:(lo+k+1)*size], want) >= 0
	})
	return i < hi && bytes.Equal(names[i*size:(i+1)*size], want), nil
}
