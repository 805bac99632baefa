package runner

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DefaultScratchSize bounds each of a session's private /tmp, /var/tmp
// and /dev/shm: a tenth of memory each, enough for builds and tests,
// and together under a third of the machine.
const DefaultScratchSize = "10%"

var scratchSize = regexp.MustCompile(`^[1-9][0-9]{0,15}[kmgKMG%]?$`)

// CheckScratchSize checks a size for the session's scratch directories:
// a number of bytes with an optional k, m or g, or a percentage of memory
// from 1% to 100%, as tmpfs's size= takes it.
func CheckScratchSize(s string) error {
	if !scratchSize.MatchString(s) {
		return fmt.Errorf("scratch size %q is not a size: write bytes with k, m or g (512m, 2g) or a percentage of memory (10%%)", s)
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		if n, err := strconv.Atoi(pct); err != nil || n > 100 {
			return fmt.Errorf("scratch size %q is more than all of memory: give at most 100%%", s)
		}
	}
	return nil
}
