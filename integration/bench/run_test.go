package main

import (
	"maps"
	"testing"
)

func TestOpsDelta(t *testing.T) {
	for _, tc := range []struct {
		name          string
		after, before map[string]uint64
		want          map[string]uint64
	}{
		{"a phase's own requests", map[string]uint64{"READ": 10, "GETATTR": 7, "LOOKUP": 3}, map[string]uint64{"READ": 4, "GETATTR": 7},
			map[string]uint64{"READ": 6, "LOOKUP": 3}},
		{"nothing sent", map[string]uint64{"READ": 4}, map[string]uint64{"READ": 4}, map[string]uint64{}},
		{"first snapshot empty", map[string]uint64{"OPEN": 1}, map[string]uint64{}, map[string]uint64{"OPEN": 1}},
	} {
		if got := opsDelta(tc.after, tc.before); !maps.Equal(got, tc.want) {
			t.Errorf("%s: opsDelta = %v, want %v", tc.name, got, tc.want)
		}
	}
}
