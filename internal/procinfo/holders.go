package procinfo

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Bounds of a holder scan: a busy mount is explained by its first few
// users, not by all of them.
const (
	maxHolders   = 20
	maxUsesShown = 3
	maxMapsLines = 1 << 16
)

// Holder is a process that keeps a mount busy, and how.
type Holder struct {
	Pid  int      `json:"pid"`
	Comm string   `json:"comm"`
	Uses []string `json:"uses"` // "working directory /m/src", "open file /m/a (fd 3)", …
}

// HolderScan is the result of Holders.
type HolderScan struct {
	Holders []Holder `json:"holders"`
	// More counts holders beyond those listed.
	More int `json:"more,omitempty"`
	// Hidden counts processes this user may not inspect (their cwd or
	// descriptors are unreadable), which may hold the mount too.
	Hidden int `json:"hidden,omitempty"`
}

// Holders finds the processes whose working directory, root, executable,
// open descriptors or mapped files lie at or below mountpoint: what keeps
// the kernel from unmounting it (EBUSY). It reads /proc, so it sees the
// processes of this pid namespace; only root sees every user's.
func Holders(mountpoint string) HolderScan {
	return holdersIn("/proc", mountpoint, os.Getpid())
}

func holdersIn(procRoot, mountpoint string, self int) HolderScan {
	var scan HolderScan
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return scan
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != self {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	under := func(p string) bool { return p == mountpoint || strings.HasPrefix(p, mountpoint+"/") }
	for _, pid := range pids {
		dir := filepath.Join(procRoot, strconv.Itoa(pid))
		var uses []string
		denied := false
		link := func(name, what string) {
			target, err := os.Readlink(filepath.Join(dir, name))
			if os.IsPermission(err) {
				denied = true
			}
			if err == nil && under(target) {
				uses = append(uses, what+" "+target)
			}
		}
		link("cwd", "working directory")
		link("root", "root directory")
		link("exe", "executable")
		if fds, err := os.ReadDir(filepath.Join(dir, "fd")); err == nil {
			for _, fd := range fds {
				if target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && under(target) {
					uses = append(uses, fmt.Sprintf("open file %s (fd %s)", target, fd.Name()))
				}
			}
		} else if os.IsPermission(err) {
			denied = true
		}
		uses = append(uses, mappedUnder(filepath.Join(dir, "maps"), under)...)
		switch {
		case len(uses) > 0 && len(scan.Holders) < maxHolders:
			if len(uses) > maxUsesShown {
				uses = append(uses[:maxUsesShown], fmt.Sprintf("and %d more", len(uses)-maxUsesShown))
			}
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			scan.Holders = append(scan.Holders, Holder{Pid: pid, Comm: strings.TrimSpace(string(comm)), Uses: uses})
		case len(uses) > 0:
			scan.More++
		case denied:
			scan.Hidden++
		}
	}
	return scan
}

// mappedUnder lists the files below the mount that a process has mapped
// (a running binary's libraries, an mmap'd database), each once.
func mappedUnder(maps string, under func(string) bool) []string {
	f, err := os.Open(maps)
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan() && n < maxMapsLines; n++ {
		// address perms offset dev inode pathname
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 6 {
			continue
		}
		p := strings.TrimSpace(fields[5])
		if under(p) && !seen[p] {
			seen[p] = true
			out = append(out, "mapped file "+p)
		}
	}
	return out
}
