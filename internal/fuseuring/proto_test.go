package fuseuring

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPossibleCPUs(t *testing.T) {
	for _, tc := range []struct {
		list string
		want int
		bad  bool
	}{
		{"0\n", 1, false},
		{"0-1\n", 2, false},
		{"0-3,5", 5, false},
		{"0-7,16-23", 16, false},
		{"", 0, true},
		{"3-1", 0, true},
		{"x", 0, true},
	} {
		got, err := possibleCPUs(tc.list)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("possibleCPUs(%q) = %d, %v; want %d (error: %v)", tc.list, got, err, tc.want, tc.bad)
		}
	}
}

func TestPayloadSize(t *testing.T) {
	for _, tc := range []struct{ maxWrite, maxPages, page, want int }{
		{128 << 10, 32, 4096, 128 << 10},
		{4096, 1, 4096, minPayload}, // never below FUSE_MIN_READ_BUFFER
		{100 << 10, 25, 4096, 100 << 10},
		{100<<10 + 1, 26, 4096, 26 * 4096}, // whole pages
	} {
		if got := payloadSize(tc.maxWrite, tc.maxPages, tc.page); got != tc.want {
			t.Errorf("payloadSize(%d, %d, %d) = %d, want %d", tc.maxWrite, tc.maxPages, tc.page, got, tc.want)
		}
	}
}

// ringRequest lays a request out as fuse_uring_args_to_ring does.
func ringRequest(opcode uint32, unique uint64, op, payload []byte) (hdr, buf []byte) {
	hdr = make([]byte, headerSize)
	buf = make([]byte, minPayload)
	binary.LittleEndian.PutUint32(hdr[0:], uint32(inHeaderSize+len(op)+len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], opcode)
	binary.LittleEndian.PutUint64(hdr[8:], unique)
	copy(hdr[headerOpIn:], op)
	copy(buf, payload)
	binary.LittleEndian.PutUint64(hdr[entCommitID:], unique)
	binary.LittleEndian.PutUint32(hdr[entPayloadSz:], uint32(len(payload)))
	return hdr, buf
}

func TestParseRequest(t *testing.T) {
	op := make([]byte, 40)
	op[0] = 0xEE
	hdr, buf := ringRequest(16, 77, op, []byte("data"))
	req, ok := parseRequest(hdr, buf)
	if !ok {
		t.Fatal("a well-formed request was refused")
	}
	if req.commitID != 77 || len(req.in) != 3 || len(req.in[0]) != inHeaderSize || len(req.in[1]) != 40 || req.in[1][0] != 0xEE || string(req.in[2]) != "data" {
		t.Fatalf("parsed %d: %d/%d/%q", req.commitID, len(req.in[0]), len(req.in[1]), req.in[2])
	}
	// LOOKUP since Linux 6.14: an empty in_args[0], the name in the payload.
	hdr, buf = ringRequest(1, 5, nil, []byte("name\x00"))
	if req, ok = parseRequest(hdr, buf); !ok || len(req.in[1]) != 0 || string(req.in[2]) != "name\x00" {
		t.Fatalf("lookup parsed as %v, %v", req.in, ok)
	}
	for name, mutate := range map[string]func(hdr []byte){
		"payload larger than the buffer": func(h []byte) { binary.LittleEndian.PutUint32(h[entPayloadSz:], minPayload+1) },
		"length shorter than its parts":  func(h []byte) { binary.LittleEndian.PutUint32(h[0:], uint32(inHeaderSize)) },
		"op struct beyond op_in":         func(h []byte) { binary.LittleEndian.PutUint32(h[0:], uint32(inHeaderSize+headerOpInSize+1+4)) },
	} {
		hdr, buf := ringRequest(16, 9, op, []byte("data"))
		mutate(hdr)
		if req, ok := parseRequest(hdr, buf); ok || req.commitID != 9 {
			t.Errorf("%s: accepted (%v), commit ID %d", name, ok, req.commitID)
		}
	}
}

func TestReplyAndError(t *testing.T) {
	hdr := make([]byte, headerSize)
	setReply(hdr, outHeaderSize+120)
	if got := binary.LittleEndian.Uint32(hdr[entPayloadSz:]); got != 120 {
		t.Errorf("payload_sz = %d, want 120", got)
	}
	setError(hdr, 42, 5)
	if l, e, u, p := binary.LittleEndian.Uint32(hdr[0:]), int32(binary.LittleEndian.Uint32(hdr[4:])), binary.LittleEndian.Uint64(hdr[8:]), binary.LittleEndian.Uint32(hdr[entPayloadSz:]); l != outHeaderSize || e != -5 || u != 42 || p != 0 {
		t.Errorf("error reply: len %d error %d unique %d payload %d; want 16, -5, 42, 0", l, e, u, p)
	}
}

func TestCmdReq(t *testing.T) {
	area := make([]byte, 80)
	cmdReq(area, 0x1122334455667788, 3)
	if binary.LittleEndian.Uint64(area[0:]) != 0 || binary.LittleEndian.Uint64(area[8:]) != 0x1122334455667788 || binary.LittleEndian.Uint16(area[16:]) != 3 {
		t.Errorf("fuse_uring_cmd_req = % x", area[:24])
	}
}

func TestAvailableExplainsWhy(t *testing.T) {
	dir := t.TempDir()
	off := filepath.Join(dir, "off")
	if err := os.WriteFile(off, []byte("N\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := available(off); err == nil || !strings.Contains(err.Error(), "echo Y > "+off) {
		t.Errorf("switched off: %v, want the command that switches it on", err)
	}
	if err := available(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "CONFIG_FUSE_IO_URING") {
		t.Errorf("no parameter: %v, want the kernel requirement", err)
	}
	on := filepath.Join(dir, "on")
	if err := os.WriteFile(on, []byte("Y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := available(on); err != nil {
		t.Errorf("switched on, on a kernel with io_uring: %v", err)
	}
}
