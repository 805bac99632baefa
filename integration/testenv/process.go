package testenv

import (
	"bytes"
	"fmt"
	"os"
)

// ProcessExited reports whether pid has exited: gone, or a zombie with
// no thread left running, whose files the kernel has closed. The leader
// of a killed process turns zombie while its other threads may still be
// leaving the kernel, holding the files they share (the mount's lock
// among them): those threads must be gone too.
func ProcessExited(pid int) bool {
	if !threadExited(fmt.Sprintf("/proc/%d/stat", pid)) {
		return false
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true // reaped
	}
	for _, task := range tasks {
		if !threadExited(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name())) {
			return false
		}
	}
	return true
}

// threadExited reports whether the process or thread whose stat file is
// path is gone or a zombie.
func threadExited(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X')
}
