package fsnode

import "testing"

func TestDirFdCacheBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int
		takes int
		want  int // how many takes succeed
	}{
		{"bounded", 3, 5, 3},
		{"none cached", -1, 2, 0},
		{"follows the descriptor limit", 0, 4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &dirFdCache{max: tc.max}
			got := 0
			for range tc.takes {
				if c.take() {
					got++
				}
			}
			if got != tc.want || c.held.Load() != int64(got) {
				t.Fatalf("%d of %d takes succeeded, %d held; want %d", got, tc.takes, c.held.Load(), tc.want)
			}
			if got > 0 {
				c.give()
				if !c.take() {
					t.Fatal("a descriptor given back cannot be taken again")
				}
			}
		})
	}
}
