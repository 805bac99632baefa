package rawfs

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// dirStub is a raw filesystem that hands out directory handle 7 and
// remembers which handles the requests carried.
type dirStub struct {
	fuse.RawFileSystem
	opened, released []uint64
	used             uint64
}

func (s *dirStub) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	out.Fh = 7
	s.opened = append(s.opened, 7)
	return fuse.OK
}

func (s *dirStub) ReleaseDir(in *fuse.ReleaseIn) { s.released = append(s.released, in.Fh) }

func (s *dirStub) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	s.used = in.Fh
	return fuse.OK
}

func (s *dirStub) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	s.used = in.Fh
	return fuse.OK
}

func TestOpendirElider(t *testing.T) {
	tests := []struct {
		name         string
		elide        bool
		call         func(e *OpendirElider) fuse.Status
		wantStatus   fuse.Status
		wantUsed     uint64
		wantOpened   int
		wantReleased []uint64
	}{
		{name: "OPENDIR declined when the kernel can do without", elide: true,
			call:       func(e *OpendirElider) fuse.Status { return e.OpenDir(nil, &fuse.OpenIn{}, &fuse.OpenOut{}) },
			wantStatus: fuse.ENOSYS},
		{name: "OPENDIR passed on to an older kernel", elide: false,
			call:       func(e *OpendirElider) fuse.Status { return e.OpenDir(nil, &fuse.OpenIn{}, &fuse.OpenOut{}) },
			wantStatus: fuse.OK, wantOpened: 1},
		{name: "READDIRPLUS with handle 0 gets a request-long handle", elide: true,
			call: func(e *OpendirElider) fuse.Status {
				return e.ReadDirPlus(nil, &fuse.ReadIn{}, fuse.NewDirEntryList(make([]byte, 512), 0))
			},
			wantStatus: fuse.OK, wantUsed: 7, wantOpened: 1, wantReleased: []uint64{7}},
		{name: "READDIRPLUS with the kernel's handle uses it", elide: false,
			call: func(e *OpendirElider) fuse.Status {
				return e.ReadDirPlus(nil, &fuse.ReadIn{Fh: 3}, fuse.NewDirEntryList(make([]byte, 512), 0))
			},
			wantStatus: fuse.OK, wantUsed: 3},
		{name: "FSYNCDIR with handle 0 reaches a handle", elide: true,
			call:       func(e *OpendirElider) fuse.Status { return e.FsyncDir(nil, &fuse.FsyncIn{}) },
			wantStatus: fuse.OK, wantUsed: 7, wantOpened: 1, wantReleased: []uint64{7}},
		{name: "RELEASEDIR of handle 0 releases nothing", elide: true,
			call:       func(e *OpendirElider) fuse.Status { e.ReleaseDir(&fuse.ReleaseIn{}); return fuse.OK },
			wantStatus: fuse.OK},
		{name: "RELEASEDIR of a kernel handle is passed on", elide: false,
			call:         func(e *OpendirElider) fuse.Status { e.ReleaseDir(&fuse.ReleaseIn{Fh: 3}); return fuse.OK },
			wantStatus:   fuse.OK,
			wantReleased: []uint64{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stub := &dirStub{RawFileSystem: fuse.NewDefaultRawFileSystem()}
			e := &OpendirElider{RawFileSystem: stub, elide: tt.elide}
			if got := tt.call(e); got != tt.wantStatus {
				t.Fatalf("status %v, want %v", got, tt.wantStatus)
			}
			if stub.used != tt.wantUsed || len(stub.opened) != tt.wantOpened || len(stub.released) != len(tt.wantReleased) {
				t.Fatalf("used handle %d, opened %v, released %v; want %d, %d opens, %v",
					stub.used, stub.opened, stub.released, tt.wantUsed, tt.wantOpened, tt.wantReleased)
			}
			for i := range tt.wantReleased {
				if stub.released[i] != tt.wantReleased[i] {
					t.Fatalf("released %v, want %v", stub.released, tt.wantReleased)
				}
			}
		})
	}
}
