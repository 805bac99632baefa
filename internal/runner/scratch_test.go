package runner

import "testing"

func TestCheckScratchSize(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"10%", true}, {"100%", true}, {"512m", true}, {"2g", true}, {"4096", true}, {"1K", true},
		{"", false}, {"0", false}, {"101%", false}, {"-1g", false}, {"2g,mode=777", false}, {"1t", false},
		{"10%%", false}, {"g", false}, {"2 g", false},
	} {
		if err := CheckScratchSize(tc.in); (err == nil) != tc.ok {
			t.Errorf("CheckScratchSize(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}
