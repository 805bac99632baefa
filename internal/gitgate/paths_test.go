package gitgate

import "testing"

func TestParsePackedBranches(t *testing.T) {
	a, b := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	const sorted = "# pack-refs with: peeled fully-peeled sorted \n"
	tests := []struct {
		name, in string
		ok       bool
		main     string
	}{
		{"sorted", sorted + a + " refs/heads/main\n" + b + " refs/heads/side\n^" + a + "\n" + b + " refs/tags/v1\n", true, a},
		{"unsorted without the claim", "# pack-refs with: peeled\n" + b + " refs/heads/side\n" + a + " refs/heads/main\n", true, a},
		{"no header", a + " refs/heads/main\n", true, a},
		{"a name twice", sorted + b + " refs/heads/main\n" + a + " refs/heads/main\n", false, ""},
		{"a name twice, apart", sorted + b + " refs/heads/main\n" + a + " refs/heads/zzz\n" + a + " refs/heads/main\n", false, ""},
		{"twice without the claim", a + " refs/heads/main\n" + b + " refs/heads/main\n", false, ""},
		{"out of order with the claim", sorted + b + " refs/heads/side\n" + a + " refs/heads/main\n", false, ""},
		{"not an id", "xyz refs/heads/main\n", false, ""},
	}
	for _, tt := range tests {
		got, ok := parsePackedBranches([]byte(tt.in))
		if ok != tt.ok || (ok && got["refs/heads/main"] != tt.main) {
			t.Errorf("%s: parsePackedBranches = %v, %v; want ok %v, main %q", tt.name, got, ok, tt.ok, tt.main)
		}
	}
}

func TestPackFile(t *testing.T) {
	tests := []struct {
		in, base string
		ok       bool
	}{
		{"objects/pack/pack-abc.idx", "pack-abc", true},
		{"objects/pack/pack-abc.pack", "pack-abc", true},
		{"objects/pack/evil.idx", "evil", true}, // git reads any *.idx
		{"objects/pack/evil.pack", "evil", true},
		{"objects/pack/.idx", "", false},
		{"objects/pack/pack-abc.rev", "", false},
		{"objects/pack/sub/x.idx", "", false},
		{"objects/ab/cdef", "", false},
	}
	for _, tt := range tests {
		if base, ok := packFile(tt.in); base != tt.base || ok != tt.ok {
			t.Errorf("packFile(%q) = %q, %v; want %q, %v", tt.in, base, ok, tt.base, tt.ok)
		}
	}
}
