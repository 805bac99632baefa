package fsnode

import "testing"

// TestHandleLimitIsPerUID fills one uid's share: that uid is refused,
// another is not, and a returned handle makes room again.
func TestHandleLimitIsPerUID(t *testing.T) {
	h := handleLimit{max: 3, byUID: map[uint32]int{}}
	for i := 0; i < 3; i++ {
		if !h.take(1000) {
			t.Fatalf("handle %d of 3 refused", i+1)
		}
	}
	steps := []struct {
		name string
		do   func() bool
		want bool
	}{
		{"uid 1000 past its share", func() bool { return h.take(1000) }, false},
		{"root while uid 1000 is full", func() bool { return h.take(0) }, true},
		{"uid 1001 while uid 1000 is full", func() bool { return h.take(1001) }, true},
		{"uid 1000 after giving one back", func() bool { h.give(1000); return h.take(1000) }, true},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Errorf("%s: take = %v, want %v", s.name, got, s.want)
		}
	}
	unlimited := handleLimit{max: -1}
	if !unlimited.take(1) {
		t.Error("a negative max refuses handles")
	}
	if d := defaultHandlesPerUID(); d < 64 {
		t.Errorf("default share %d", d)
	}
}
