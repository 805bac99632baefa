package rawfs

import (
	"errors"
	"maps"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// rawStub answers OPEN and CREATE with status, noting that they ran, and
// LOOKUP and GETATTR with OK.
type rawStub struct {
	fuse.RawFileSystem
	status fuse.Status
	ran    []string
}

func (s *rawStub) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	s.ran = append(s.ran, "OPEN")
	return s.status
}

func (s *rawStub) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	s.ran = append(s.ran, "CREATE")
	return s.status
}

func (s *rawStub) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.OK
}

func (s *rawStub) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	return fuse.OK
}

func TestCallerScope(t *testing.T) {
	caller := fuse.Caller{Owner: fuse.Owner{Uid: 1000, Gid: 1000}, Pid: 42}
	tests := []struct {
		name    string
		status  fuse.Status // what the wrapped handler answers
		runErr  error       // what taking on the caller's credentials returns
		want    fuse.Status
		wantRan bool
	}{
		{"the handler's answer passes", fuse.OK, nil, fuse.OK, true},
		{"the handler's refusal passes", fuse.EACCES, nil, fuse.EACCES, true},
		{"credentials that cannot be taken on refuse", fuse.OK, errors.New("setfsuid failed"), fuse.EACCES, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stub := &rawStub{status: tt.status}
			var as []fuse.Caller
			scope := CallerScope(stub, func(c *fuse.Caller, fn func() error) error {
				as = append(as, *c)
				if tt.runErr != nil {
					return tt.runErr
				}
				return fn()
			})
			open := scope.Open(nil, &fuse.OpenIn{InHeader: fuse.InHeader{Caller: caller}}, &fuse.OpenOut{})
			create := scope.Create(nil, &fuse.CreateIn{InHeader: fuse.InHeader{Caller: caller}}, "f", &fuse.CreateOut{})
			if open != tt.want || create != tt.want {
				t.Errorf("OPEN answered %v, CREATE %v; want %v", open, create, tt.want)
			}
			if ran := len(stub.ran) == 2; ran != tt.wantRan {
				t.Errorf("the wrapped handler ran %v, want it to run: %v", stub.ran, tt.wantRan)
			}
			if len(as) != 2 || as[0] != caller || as[1] != caller {
				t.Errorf("ran as %+v, want the request's caller %+v twice", as, caller)
			}
			// Other requests are not scoped.
			if st := scope.Lookup(nil, &fuse.InHeader{Caller: caller}, "f", &fuse.EntryOut{}); st != fuse.OK || len(as) != 2 {
				t.Errorf("LOOKUP answered %v after %d credential switches, want OK without one", st, len(as)-2)
			}
		})
	}
}

func TestOpCounter(t *testing.T) {
	c := CountOps(&rawStub{status: fuse.OK})
	if got := c.Counts(); len(got) != 0 {
		t.Fatalf("counts before any request: %v", got)
	}
	for range 3 {
		c.Lookup(nil, &fuse.InHeader{}, "f", &fuse.EntryOut{})
	}
	c.GetAttr(nil, &fuse.GetAttrIn{}, &fuse.AttrOut{})
	c.Open(nil, &fuse.OpenIn{}, &fuse.OpenOut{})
	want := map[string]uint64{"LOOKUP": 3, "GETATTR": 1, "OPEN": 1}
	if got := c.Counts(); !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}
