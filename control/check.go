package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/intentfs/intentfs/policy"
)

// DryRunResult answers "would this change be allowed now?": the policy
// decision for one path and operation, taken as a dry run (nothing is
// recorded, nothing changes), with the intents whose owned_scope covers
// the path so an agent can be told which one to select.
type DryRunResult struct {
	// Path is the workspace-relative path decided.
	Path string `json:"path"`
	// Op is the policy operation decided (create, open_write, unlink, ...).
	Op           string `json:"op"`
	ActiveIntent string `json:"active_intent"`
	Allowed      bool   `json:"allowed"`
	Code         string `json:"code"`
	Reason       string `json:"reason,omitempty"`
	// FilePermissions, when set, says why the source's own owner, mode
	// or ACL refuse the change to the asker: the kernel refuses it before
	// intentfs sees it, and nothing is recorded in .intentfs/denials.
	// Code is then FILE_PERMISSIONS if the policy would allow the change
	// (PolicyCode says so), else the policy's own code: the policy's
	// advice comes first, and the permissions still need the human.
	FilePermissions string `json:"file_permissions,omitempty"`
	PolicyCode      string `json:"policy_code,omitempty"`
	// CoveredBy lists every intent whose owned_scope covers Path, in the
	// order of the policy file, whatever its status.
	CoveredBy []IntentRef `json:"covered_by"`
	// Pinned is set when the asker's session was pinned to its intent
	// by a human (intentfs run --intent): it cannot select another.
	Pinned bool `json:"pinned,omitempty"`
}

// CodeFilePermissions is a DryRunResult's code for a change the source's
// own permissions refuse (owner, group, mode bits, ACL, read-only
// filesystem), as opposed to one the policy refuses.
const CodeFilePermissions = "FILE_PERMISSIONS"

// IntentRef names an intent and its lifecycle state.
type IntentRef struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// checkUsage is what reading .intentfs/check without asking shows.
const checkUsage = `Open this file read-write, write a workspace path (optionally "OP PATH",
OP one of create, open_write, unlink, mkdir, ...), then read the answer:
a JSON object saying whether the change would be allowed now, why, and
which intents cover the path. Nothing is recorded.
  exec 3<>.intentfs/check; printf 'src/main.go' >&3; cat <&3
`

// checkFile is .intentfs/check: a question written on a read-write handle
// is answered on the same handle, so concurrent askers never see each
// other's answers.
type checkFile struct {
	fs.Inode
	dir *Dir
	// handleless keeps each process's question and answer when the
	// file is used without a handle (see handleless.go).
	handleless byProcess[checkHandle]
	// view is the view whose answers this inode holds, on the cached
	// data path (nil: every caller's, see views.go).
	view *viewKey
}

var (
	_ = (fs.NodeGetattrer)((*checkFile)(nil))
	_ = (fs.NodeSetattrer)((*checkFile)(nil))
	_ = (fs.NodeOpener)((*checkFile)(nil))
	_ = (fs.NodeReader)((*checkFile)(nil))
	_ = (fs.NodeWriter)((*checkFile)(nil))
)

// checkHandle holds one open's answer. base is the file offset just past
// the question, so a sequential read after the write (cat <&3) and a
// pread at offset 0 both see the answer from its start. Which of the two
// a reader does is taken from its first read of the answer: a pread
// reader's later offsets pass base too, and must not be shifted.
type checkHandle struct {
	mu     sync.Mutex
	answer []byte
	base   int64
	// readMode is 0 until the answer's first read, then readSequential
	// or readFromZero.
	readMode int
}

const (
	readSequential = 1 + iota
	readFromZero
)

func (f *checkFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := f.dir.refuseOtherViews(ctx, f.view); errno != 0 {
		return errno
	}
	out.Mode = syscall.S_IFREG | 0o666
	out.Nlink = 1
	setTimes(&out.Attr)
	if fh == nil {
		// Without a handle the kernel reads through its page cache, up
		// to this size: that of the caller's answer, read from its
		// start or from after the question.
		caller, _ := fuse.FromContext(ctx)
		size := int64(len(checkUsage))
		if h := f.handleless.get(caller, false); h != nil {
			h.mu.Lock()
			size = h.base + int64(len(h.answer))
			h.mu.Unlock()
		}
		out.Size = uint64(size)
		out.SetTimeout(time.Nanosecond)
	}
	return 0
}

// Setattr accepts the truncation of an O_TRUNC open and nothing else.
func (f *checkFile) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && sz == 0 {
		return f.Getattr(ctx, fh, out)
	}
	return syscall.EPERM
}

func (f *checkFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &checkHandle{answer: []byte(checkUsage)}, fuse.FOPEN_DIRECT_IO, 0
}

func (f *checkFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := f.dir.refuseOtherViews(ctx, f.view); errno != 0 {
		return nil, errno
	}
	if fh == nil {
		caller, _ := fuse.FromContext(ctx)
		if h := f.handleless.get(caller, false); h != nil {
			return h.readPadded(dest, off), 0
		}
		fh = &checkHandle{answer: []byte(checkUsage)}
	}
	h, ok := fh.(*checkHandle)
	if !ok {
		return nil, syscall.EBADF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.readMode == 0 {
		h.readMode = readFromZero
		if h.base > 0 && off >= h.base {
			h.readMode = readSequential
		}
	}
	if h.readMode == readSequential {
		off -= h.base
	}
	if off < 0 || off >= int64(len(h.answer)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(h.answer)))
	return fuse.ReadResultData(slices.Clone(h.answer[off:end])), 0
}

// Write takes one question per write(2) and keeps its answer on the handle.
func (f *checkFile) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.dir.refuseOtherViews(ctx, f.view); errno != 0 {
		return 0, errno
	}
	if fh == nil {
		caller, _ := fuse.FromContext(ctx)
		fh = f.handleless.get(caller, true)
	}
	h, ok := fh.(*checkHandle)
	if !ok {
		return 0, syscall.EBADF
	}
	caller, _ := fuse.FromContext(ctx)
	by := f.dir.describe(caller)
	op, path, err := parseCheckQuestion(data)
	if err != nil {
		shown := data
		if len(shown) > 64 {
			shown = shown[:64]
		}
		f.dir.backend.InvalidControlWrite("check", shown, err, by)
		return 0, syscall.EINVAL
	}
	res, err := f.dir.backend.DryRun(path, op, by)
	if err != nil {
		f.dir.backend.InvalidControlWrite("check", data, err, by)
		return 0, syscall.EINVAL
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	h.mu.Lock()
	h.answer = append(b, '\n')
	h.base = off + int64(len(data))
	h.readMode = 0
	h.mu.Unlock()
	return uint32(len(data)), 0
}

// parseCheckQuestion reads "PATH" or "OP PATH" (one line).
func parseCheckQuestion(data []byte) (op, path string, err error) {
	if len(data) > maxControlWrite {
		return "", "", errors.New("write larger than 4 KiB")
	}
	if !utf8.Valid(data) {
		return "", "", errors.New("not text")
	}
	q := strings.TrimSpace(string(data))
	if q == "" || strings.ContainsAny(q, "\n\x00") {
		return "", "", errors.New(`write one line: "PATH" or "OP PATH"`)
	}
	if first, rest, ok := strings.Cut(q, " "); ok {
		if isDryRunOp(first) {
			return first, strings.TrimSpace(rest), nil
		}
		if first == string(policy.OpRename) || first == string(policy.OpLink) {
			// Two-path operations are asked about one end at a time.
			return "", "", fmt.Errorf("%s needs both of its paths checked: ask about each (create or open_write PATH)", first)
		}
	}
	return "", q, nil
}

// DryRunOps lists the operations a check may name; a new slice each call.
func DryRunOps() []string {
	return []string{"create", "open_write", "truncate", "chmod", "chown", "utimes", "mkdir", "mknod", "symlink",
		"unlink", "rmdir", "setxattr", "removexattr", "fallocate"}
}

func isDryRunOp(s string) bool {
	for _, op := range DryRunOps() {
		if op == s {
			return true
		}
	}
	return false
}

// readPadded reads a handle-less answer. The kernel reads through its
// page cache, whole pages from the file's start, and hands the reader the
// bytes from its position: after the question for the descriptor that
// asked it, the start for a new open. Both must read the answer, so the
// file is the answer after as many spaces as the question had, which a
// JSON reader from the start skips.
func (h *checkHandle) readPadded(dest []byte, off int64) fuse.ReadResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	size := h.base + int64(len(h.answer))
	if off < 0 || off >= size {
		return fuse.ReadResultData(nil)
	}
	end := min(off+int64(len(dest)), size)
	out := make([]byte, 0, end-off)
	for p := off; p < end; p++ {
		if p < h.base {
			out = append(out, ' ')
		} else {
			out = append(out, h.answer[p-h.base])
		}
	}
	return fuse.ReadResultData(out)
}
