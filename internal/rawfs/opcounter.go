package rawfs

// Each method below counts one FUSE operation and forwards it.

import (
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
)

type opcode int

const (
	opLookup opcode = iota
	opGetAttr
	opSetAttr
	opMknod
	opMkdir
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opReadlink
	opAccess
	opGetXAttr
	opListXAttr
	opSetXAttr
	opRemoveXAttr
	opCreate
	opOpen
	opRead
	opLseek
	opGetLk
	opSetLk
	opSetLkw
	opRelease
	opWrite
	opWritev
	opCopyFileRange
	opFlush
	opFsync
	opFallocate
	opOpenDir
	opReadDir
	opReadDirPlus
	opReleaseDir
	opStatFs
	opStatx
	numOps
)

var opNames = [numOps]string{"LOOKUP", "GETATTR", "SETATTR", "MKNOD", "MKDIR", "UNLINK", "RMDIR", "RENAME", "LINK", "SYMLINK", "READLINK", "ACCESS", "GETXATTR", "LISTXATTR", "SETXATTR", "REMOVEXATTR", "CREATE", "OPEN", "READ", "LSEEK", "GETLK", "SETLK", "SETLKW", "RELEASE", "WRITE", "WRITEV", "COPYFILERANGE", "FLUSH", "FSYNC", "FALLOCATE", "OPENDIR", "READDIR", "READDIRPLUS", "RELEASEDIR", "STATFS", "STATX"}

// OpCounter wraps the raw filesystem go-fuse serves and counts requests by
// opcode, so status can show where the round trips go.
type OpCounter struct {
	fuse.RawFileSystem
	counts [numOps]atomic.Uint64
}

var _ fuse.RawFileSystem = (*OpCounter)(nil)

// CountOps wraps fs.
func CountOps(fs fuse.RawFileSystem) *OpCounter { return &OpCounter{RawFileSystem: fs} }

// Counts returns the requests seen so far, by opcode (zero counts left out).
func (c *OpCounter) Counts() map[string]uint64 {
	out := map[string]uint64{}
	for i := range c.counts {
		if n := c.counts[i].Load(); n > 0 {
			out[opNames[i]] = n
		}
	}
	return out
}

func (c *OpCounter) Lookup(cancel <-chan struct{}, header *fuse.InHeader, name string, out *fuse.EntryOut) (status fuse.Status) {
	c.counts[opLookup].Add(1)
	return c.RawFileSystem.Lookup(cancel, header, name, out)
}

func (c *OpCounter) GetAttr(cancel <-chan struct{}, input *fuse.GetAttrIn, out *fuse.AttrOut) (code fuse.Status) {
	c.counts[opGetAttr].Add(1)
	return c.RawFileSystem.GetAttr(cancel, input, out)
}

func (c *OpCounter) SetAttr(cancel <-chan struct{}, input *fuse.SetAttrIn, out *fuse.AttrOut) (code fuse.Status) {
	c.counts[opSetAttr].Add(1)
	return c.RawFileSystem.SetAttr(cancel, input, out)
}

func (c *OpCounter) Mknod(cancel <-chan struct{}, input *fuse.MknodIn, name string, out *fuse.EntryOut) (code fuse.Status) {
	c.counts[opMknod].Add(1)
	return c.RawFileSystem.Mknod(cancel, input, name, out)
}

func (c *OpCounter) Mkdir(cancel <-chan struct{}, input *fuse.MkdirIn, name string, out *fuse.EntryOut) (code fuse.Status) {
	c.counts[opMkdir].Add(1)
	return c.RawFileSystem.Mkdir(cancel, input, name, out)
}

func (c *OpCounter) Unlink(cancel <-chan struct{}, header *fuse.InHeader, name string) (code fuse.Status) {
	c.counts[opUnlink].Add(1)
	return c.RawFileSystem.Unlink(cancel, header, name)
}

func (c *OpCounter) Rmdir(cancel <-chan struct{}, header *fuse.InHeader, name string) (code fuse.Status) {
	c.counts[opRmdir].Add(1)
	return c.RawFileSystem.Rmdir(cancel, header, name)
}

func (c *OpCounter) Rename(cancel <-chan struct{}, input *fuse.RenameIn, oldName string, newName string) (code fuse.Status) {
	c.counts[opRename].Add(1)
	return c.RawFileSystem.Rename(cancel, input, oldName, newName)
}

func (c *OpCounter) Link(cancel <-chan struct{}, input *fuse.LinkIn, filename string, out *fuse.EntryOut) (code fuse.Status) {
	c.counts[opLink].Add(1)
	return c.RawFileSystem.Link(cancel, input, filename, out)
}

func (c *OpCounter) Symlink(cancel <-chan struct{}, header *fuse.InHeader, pointedTo string, linkName string, out *fuse.EntryOut) (code fuse.Status) {
	c.counts[opSymlink].Add(1)
	return c.RawFileSystem.Symlink(cancel, header, pointedTo, linkName, out)
}

func (c *OpCounter) Readlink(cancel <-chan struct{}, header *fuse.InHeader) (out []byte, code fuse.Status) {
	c.counts[opReadlink].Add(1)
	return c.RawFileSystem.Readlink(cancel, header)
}

func (c *OpCounter) Access(cancel <-chan struct{}, input *fuse.AccessIn) (code fuse.Status) {
	c.counts[opAccess].Add(1)
	return c.RawFileSystem.Access(cancel, input)
}

func (c *OpCounter) GetXAttr(cancel <-chan struct{}, header *fuse.InHeader, attr string, dest []byte) (sz uint32, code fuse.Status) {
	c.counts[opGetXAttr].Add(1)
	return c.RawFileSystem.GetXAttr(cancel, header, attr, dest)
}

func (c *OpCounter) ListXAttr(cancel <-chan struct{}, header *fuse.InHeader, dest []byte) (sz uint32, code fuse.Status) {
	c.counts[opListXAttr].Add(1)
	return c.RawFileSystem.ListXAttr(cancel, header, dest)
}

func (c *OpCounter) SetXAttr(cancel <-chan struct{}, input *fuse.SetXAttrIn, attr string, data []byte) (code fuse.Status) {
	c.counts[opSetXAttr].Add(1)
	return c.RawFileSystem.SetXAttr(cancel, input, attr, data)
}

func (c *OpCounter) RemoveXAttr(cancel <-chan struct{}, header *fuse.InHeader, attr string) (code fuse.Status) {
	c.counts[opRemoveXAttr].Add(1)
	return c.RawFileSystem.RemoveXAttr(cancel, header, attr)
}

func (c *OpCounter) Create(cancel <-chan struct{}, input *fuse.CreateIn, name string, out *fuse.CreateOut) (code fuse.Status) {
	c.counts[opCreate].Add(1)
	return c.RawFileSystem.Create(cancel, input, name, out)
}

func (c *OpCounter) Open(cancel <-chan struct{}, input *fuse.OpenIn, out *fuse.OpenOut) (status fuse.Status) {
	c.counts[opOpen].Add(1)
	return c.RawFileSystem.Open(cancel, input, out)
}

func (c *OpCounter) Read(cancel <-chan struct{}, input *fuse.ReadIn, buf []byte) (res fuse.ReadResult, code fuse.Status) {
	c.counts[opRead].Add(1)
	return c.RawFileSystem.Read(cancel, input, buf)
}

func (c *OpCounter) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) (code fuse.Status) {
	c.counts[opLseek].Add(1)
	return c.RawFileSystem.Lseek(cancel, in, out)
}

func (c *OpCounter) GetLk(cancel <-chan struct{}, input *fuse.LkIn, out *fuse.LkOut) (code fuse.Status) {
	c.counts[opGetLk].Add(1)
	return c.RawFileSystem.GetLk(cancel, input, out)
}

func (c *OpCounter) SetLk(cancel <-chan struct{}, input *fuse.LkIn) (code fuse.Status) {
	c.counts[opSetLk].Add(1)
	return c.RawFileSystem.SetLk(cancel, input)
}

func (c *OpCounter) SetLkw(cancel <-chan struct{}, input *fuse.LkIn) (code fuse.Status) {
	c.counts[opSetLkw].Add(1)
	return c.RawFileSystem.SetLkw(cancel, input)
}

func (c *OpCounter) Release(cancel <-chan struct{}, input *fuse.ReleaseIn) {
	c.counts[opRelease].Add(1)
	c.RawFileSystem.Release(cancel, input)
}

func (c *OpCounter) Write(cancel <-chan struct{}, input *fuse.WriteIn, data []byte) (written uint32, code fuse.Status) {
	c.counts[opWrite].Add(1)
	return c.RawFileSystem.Write(cancel, input, data)
}

func (c *OpCounter) Writev(cancel <-chan struct{}, input *fuse.WriteIn, data [][]byte) (written uint32, code fuse.Status) {
	c.counts[opWritev].Add(1)
	return c.RawFileSystem.Writev(cancel, input, data)
}

func (c *OpCounter) CopyFileRange(cancel <-chan struct{}, input *fuse.CopyFileRangeIn) (written uint32, code fuse.Status) {
	c.counts[opCopyFileRange].Add(1)
	return c.RawFileSystem.CopyFileRange(cancel, input)
}

func (c *OpCounter) Flush(cancel <-chan struct{}, input *fuse.FlushIn) (code fuse.Status) {
	c.counts[opFlush].Add(1)
	return c.RawFileSystem.Flush(cancel, input)
}

func (c *OpCounter) Fsync(cancel <-chan struct{}, input *fuse.FsyncIn) (code fuse.Status) {
	c.counts[opFsync].Add(1)
	return c.RawFileSystem.Fsync(cancel, input)
}

func (c *OpCounter) Fallocate(cancel <-chan struct{}, input *fuse.FallocateIn) (code fuse.Status) {
	c.counts[opFallocate].Add(1)
	return c.RawFileSystem.Fallocate(cancel, input)
}

func (c *OpCounter) OpenDir(cancel <-chan struct{}, input *fuse.OpenIn, out *fuse.OpenOut) (status fuse.Status) {
	c.counts[opOpenDir].Add(1)
	return c.RawFileSystem.OpenDir(cancel, input, out)
}

func (c *OpCounter) ReadDir(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) (code fuse.Status) {
	c.counts[opReadDir].Add(1)
	return c.RawFileSystem.ReadDir(cancel, input, out)
}

func (c *OpCounter) ReadDirPlus(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) (code fuse.Status) {
	c.counts[opReadDirPlus].Add(1)
	return c.RawFileSystem.ReadDirPlus(cancel, input, out)
}

func (c *OpCounter) ReleaseDir(input *fuse.ReleaseIn) {
	c.counts[opReleaseDir].Add(1)
	c.RawFileSystem.ReleaseDir(input)
}

func (c *OpCounter) StatFs(cancel <-chan struct{}, input *fuse.InHeader, out *fuse.StatfsOut) (code fuse.Status) {
	c.counts[opStatFs].Add(1)
	return c.RawFileSystem.StatFs(cancel, input, out)
}

func (c *OpCounter) Statx(cancel <-chan struct{}, input *fuse.StatxIn, out *fuse.StatxOut) (code fuse.Status) {
	c.counts[opStatx].Add(1)
	return c.RawFileSystem.Statx(cancel, input, out)
}
