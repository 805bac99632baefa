package control

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The control directory is fixed for the life of the mount: it is the
// agent's only in-mount way to select an intent and read its status, so
// nobody, root included, may remove, rename, add to or re-mode it. go-fuse
// treats a missing NodeUnlinker or NodeRmdirer as success and drops the
// child from its tree, so each of these must be refused explicitly.
var (
	_ = (fs.NodeUnlinker)((*Dir)(nil))
	_ = (fs.NodeRmdirer)((*Dir)(nil))
	_ = (fs.NodeRenamer)((*Dir)(nil))
	_ = (fs.NodeMkdirer)((*Dir)(nil))
	_ = (fs.NodeCreater)((*Dir)(nil))
	_ = (fs.NodeMknoder)((*Dir)(nil))
	_ = (fs.NodeSymlinker)((*Dir)(nil))
	_ = (fs.NodeLinker)((*Dir)(nil))
	_ = (fs.NodeSetattrer)((*Dir)(nil))
)

// Unlink refuses to remove a control file.
func (d *Dir) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EPERM }

// Rmdir refuses: the control directory holds no directories to remove.
func (d *Dir) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EPERM }

// Rename refuses to move a control file, within the directory or out of it.
func (d *Dir) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EPERM
}

// Mkdir refuses new entries.
func (d *Dir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Create refuses new entries.
func (d *Dir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EPERM
}

// Mknod refuses new entries.
func (d *Dir) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Symlink refuses new entries.
func (d *Dir) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Link refuses new entries.
func (d *Dir) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Setattr refuses chmod, chown and utimes of the directory: its mode is
// what lets every user reach the control files.
func (d *Dir) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return syscall.EPERM
}
