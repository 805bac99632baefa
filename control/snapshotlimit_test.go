package control

import (
	"syscall"
	"testing"
)

func TestSnapshotLimit(t *testing.T) {
	var l snapshotLimit
	var releases []func()
	for i := range maxSnapshotHandles {
		r, errno := l.take(1000, 10)
		if errno != 0 {
			t.Fatalf("handle %d refused: %v", i, errno)
		}
		releases = append(releases, r)
	}
	if _, errno := l.take(1000, 0); errno != syscall.EMFILE {
		t.Fatalf("handle past the share: %v, want EMFILE", errno)
	}
	if r, errno := l.take(0, maxSnapshotBytes); errno != 0 {
		t.Fatalf("another uid's handle refused: %v", errno)
	} else if _, errno := l.take(0, 1); errno != syscall.EMFILE {
		t.Fatalf("bytes past the share: %v, want EMFILE", errno)
	} else {
		r()
		r() // a second release gives nothing back twice
	}
	releases[0]()
	if _, errno := l.take(1000, 10); errno != 0 {
		t.Fatalf("handle after a release refused: %v", errno)
	}
	for _, r := range releases[1:] {
		r()
	}
	if s := l.byUID[1000]; s.handles != 1 || s.bytes != 10 {
		t.Fatalf("share after releases: %+v, want one handle of 10 bytes", s)
	}
	if _, ok := l.byUID[0]; ok {
		t.Fatal("uid 0's share is still counted after its release")
	}
}
