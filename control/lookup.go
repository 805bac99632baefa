package control

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var _ = (fs.NodeLookuper)((*Dir)(nil))

// Lookup finds a control file and lets the kernel keep its attributes
// for no time. Without it, go-fuse would answer from the children with
// the mount's attribute timeout, which is an hour when the source is
// watched, and a file's size (that of `active`, `denials`, `status`)
// changes with every select or denial. The names themselves never change,
// so the entry may be kept.
func (d *Dir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	child := d.files[name]
	if child == nil {
		return nil, syscall.ENOENT
	}
	if d.withoutHandles && perCallerFiles[name] {
		// The caller's own inode (views.go).
		caller, _ := fuse.FromContext(ctx)
		child = d.viewNode(ctx, name, caller)
	}
	if ga, ok := child.Operations().(fs.NodeGetattrer); ok {
		var a fuse.AttrOut
		if errno := ga.Getattr(ctx, nil, &a); errno != 0 {
			return nil, errno
		}
		out.Attr = a.Attr
	}
	out.SetAttrTimeout(time.Nanosecond)
	return child, 0
}
