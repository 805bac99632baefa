package fuseuring

import (
	"encoding/binary"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The ring protocol of include/uapi/linux/fuse.h (ABI 7.42).
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: in_out (the fuse_in_header of a
	// request, the fuse_out_header of its reply), op_in (the request's
	// fixed per-opcode struct, in_args[0]) and ring_ent_in_out.
	headerInOutSize = 128
	headerOpInSize  = 128
	headerOpIn      = headerInOutSize
	headerEntInOut  = headerInOutSize + headerOpInSize
	// struct fuse_uring_ent_in_out: flags, commit_id, payload_sz, padding, reserved.
	entCommitID  = headerEntInOut + 8
	entPayloadSz = headerEntInOut + 16
	headerSize   = headerEntInOut + 32

	// fuse_min_read_buffer: no payload buffer is smaller.
	minPayload = 8192

	inHeaderSize  = int(unsafe.Sizeof(fuse.InHeader{}))
	outHeaderSize = 16
)

// cmdReq fills struct fuse_uring_cmd_req (flags, commit_id, qid) in the
// command area of an SQE128.
func cmdReq(area []byte, commitID uint64, qid uint16) {
	binary.LittleEndian.PutUint64(area[8:], commitID)
	binary.LittleEndian.PutUint16(area[16:], qid)
}

// payloadSize is the kernel's ring->max_payload_sz for a connection that
// negotiated maxWrite and maxPages: every entry's payload buffer must
// hold at least that many bytes.
func payloadSize(maxWrite, maxPages, pageSize int) int {
	return max(minPayload, maxWrite, maxPages*pageSize)
}

// request is one request as the kernel left it in an entry's buffers.
type request struct {
	commitID uint64
	// in is the request as go-fuse parses it: the fuse_in_header, the
	// per-opcode struct and the payload (names, data).
	in [][]byte
}

// parseRequest reads the request the kernel put in hdr and payload.
func parseRequest(hdr, payload []byte) (request, bool) {
	commitID := binary.LittleEndian.Uint64(hdr[entCommitID:])
	payloadSz := int(binary.LittleEndian.Uint32(hdr[entPayloadSz:]))
	length := int(binary.LittleEndian.Uint32(hdr[0:]))
	opSize := length - inHeaderSize - payloadSz
	if payloadSz > len(payload) || opSize < 0 || opSize > headerOpInSize {
		return request{commitID: commitID}, false
	}
	return request{commitID: commitID, in: [][]byte{hdr[:inHeaderSize], hdr[headerOpIn : headerOpIn+opSize], payload[:payloadSz]}}, true
}

// setReply records in hdr a reply of n bytes that go-fuse wrote as one
// stream over the out header (in_out) and the payload buffer.
func setReply(hdr []byte, n int) {
	binary.LittleEndian.PutUint32(hdr[entPayloadSz:], uint32(n-outHeaderSize))
}

// setError replaces the reply in hdr with an error for the request.
func setError(hdr []byte, unique uint64, errno int32) {
	binary.LittleEndian.PutUint32(hdr[0:], outHeaderSize)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(-errno))
	binary.LittleEndian.PutUint64(hdr[8:], unique)
	binary.LittleEndian.PutUint32(hdr[entPayloadSz:], 0)
}
