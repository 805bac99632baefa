package fsnode

import "github.com/hanwen/go-fuse/v2/fs"

// The operations the mount implements, by family. go-fuse dispatches a
// request to a node or handle only when it implements the interface of
// that operation; an operation missing here is answered by go-fuse's
// default (most often ENOTSUP), so this list is what the mount does.

// Lifetime of a node in go-fuse's tree (node.go, root.go).
var (
	_ = (fs.NodeOnAdder)((*Node)(nil))
	_ = (fs.NodeOnForgetter)((*Node)(nil))
)

// Reading the tree: never decided (node.go).
var (
	_ = (fs.NodeLookuper)((*Node)(nil))
	_ = (fs.NodeGetattrer)((*Node)(nil))
	_ = (fs.NodeReadlinker)((*Node)(nil))
	_ = (fs.NodeStatfser)((*Node)(nil))
	_ = (fs.NodeOpendirHandler)((*Node)(nil))
)

// Opening and creating files: a write is decided here (node_open_create.go).
var (
	_ = (fs.NodeOpener)((*Node)(nil))
	_ = (fs.NodeCreater)((*Node)(nil))
)

// Changing names in a directory (node_dir_ops.go).
var (
	_ = (fs.NodeMkdirer)((*Node)(nil))
	_ = (fs.NodeMknoder)((*Node)(nil))
	_ = (fs.NodeSymlinker)((*Node)(nil))
	_ = (fs.NodeLinker)((*Node)(nil))
	_ = (fs.NodeUnlinker)((*Node)(nil))
	_ = (fs.NodeRmdirer)((*Node)(nil))
	_ = (fs.NodeRenamer)((*Node)(nil))
)

// Changing a file's attributes or content without a handle
// (node_setattr.go).
var (
	_ = (fs.NodeSetattrer)((*Node)(nil))
	_ = (fs.NodeAllocater)((*Node)(nil))
	_ = (fs.NodeCopyFileRanger)((*Node)(nil))
)

// Extended attributes (node_xattr.go).
var (
	_ = (fs.NodeGetxattrer)((*Node)(nil))
	_ = (fs.NodeListxattrer)((*Node)(nil))
	_ = (fs.NodeSetxattrer)((*Node)(nil))
	_ = (fs.NodeRemovexattrer)((*Node)(nil))
)

// Locks and ioctls (locks.go, ioctl.go).
var (
	_ = (fs.NodeSetlker)((*Node)(nil))
	_ = (fs.NodeSetlkwer)((*Node)(nil))
	_ = (fs.NodeIoctler)((*Node)(nil))
)

// An open file's handle: data by kernel passthrough, the record at
// RELEASE (file.go, file_write.go, ioctl.go).
var (
	_ = (fs.FilePassthroughFder)((*File)(nil))
	_ = (fs.FileWriter)((*File)(nil))
	_ = (fs.FileIoctler)((*File)(nil))
	_ = (fs.FileReleaser)((*File)(nil))
)

// The handle of a file git creates toward the declared upstream
// (upstream_file.go).
var (
	_ = (fs.FileFlusher)((*upstreamFile)(nil))
	_ = (fs.FileReleaser)((*upstreamFile)(nil))
)
