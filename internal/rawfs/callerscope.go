package rawfs

import (
	"github.com/hanwen/go-fuse/v2/fuse"
)

// RunAs runs fn with the credentials of caller, and fails if it cannot
// take them on.
type RunAs func(caller *fuse.Caller, fn func() error) error

// CallerScope wraps raw so that OPEN and CREATE run, from start to end,
// with the caller's credentials (see fsnode's Root.CallerScope for why).
func CallerScope(raw fuse.RawFileSystem, runAs RunAs) fuse.RawFileSystem {
	return &callerScope{RawFileSystem: raw, runAs: runAs}
}

type callerScope struct {
	fuse.RawFileSystem
	runAs RunAs
}

func (s *callerScope) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (status fuse.Status) {
	err := s.runAs(&in.Caller, func() error {
		status = s.RawFileSystem.Open(cancel, in, out)
		return nil
	})
	if err != nil {
		return fuse.EACCES // the caller's credentials could not be taken on
	}
	return status
}

func (s *callerScope) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) (status fuse.Status) {
	err := s.runAs(&in.Caller, func() error {
		status = s.RawFileSystem.Create(cancel, in, name, out)
		return nil
	})
	if err != nil {
		return fuse.EACCES
	}
	return status
}
