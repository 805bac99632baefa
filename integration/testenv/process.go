package testenv

import (
	"bytes"
	"fmt"
	"os"
)

// ProcessExited reports whether pid has exited: gone, or a zombie, whose
// files the kernel has closed.
func ProcessExited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X')
}
