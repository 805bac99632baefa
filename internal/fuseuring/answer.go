package fuseuring

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// answer serves the request the kernel left in an entry's buffers and
// leaves the reply there: go-fuse writes it as one stream over the out
// header (the header buffer's in_out) and the payload buffer, which is
// the ring's layout. It returns the commit ID of the request.
func (s *Server) answer(hdr, payload []byte) uint64 {
	unique := binary.LittleEndian.Uint64(hdr[8:])
	req, ok := parseRequest(hdr, payload)
	if !ok {
		s.log.Error("malformed request in a FUSE ring entry", "opcode", binary.LittleEndian.Uint32(hdr[4:]))
		setError(hdr, unique, int32(unix.EIO))
		return req.commitID
	}
	n, st := s.ps.HandleRequest(req.in, [][]byte{hdr[:outHeaderSize], payload})
	if !st.Ok() || n < outHeaderSize {
		// Every ring request takes a reply, or its caller waits forever.
		setError(hdr, unique, int32(unix.EIO))
		return req.commitID
	}
	setReply(hdr, n)
	return req.commitID
}
