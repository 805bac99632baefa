package runner

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mountEntry is one line of /proc/PID/mountinfo.
type mountEntry struct {
	Major, Minor uint32
	// Root is the path inside its filesystem that is mounted, and Point
	// where it is mounted.
	Root, Point string
	FSType      string
}

// maxMountinfo bounds what is read of mountinfo.
const maxMountinfo = 16 << 20

// parseMountinfo reads mountinfo (proc(5)): "ID PARENT MAJ:MIN ROOT POINT
// OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(io.LimitReader(r, maxMountinfo))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			return nil, fmt.Errorf("mountinfo line %q has too few fields", sc.Text())
		}
		majmin := strings.SplitN(f[2], ":", 2)
		if len(majmin) != 2 {
			return nil, fmt.Errorf("mountinfo device %q is not MAJ:MIN", f[2])
		}
		maj, err1 := strconv.ParseUint(majmin[0], 10, 32)
		min, err2 := strconv.ParseUint(majmin[1], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mountinfo device %q is not MAJ:MIN", f[2])
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("mountinfo line %q has no filesystem type", sc.Text())
		}
		out = append(out, mountEntry{Major: uint32(maj), Minor: uint32(min), Root: unescapeMountPath(f[3]),
			Point: unescapeMountPath(f[4]), FSType: f[sep+1]})
	}
	return out, sc.Err()
}

// unescapeMountPath undoes the kernel's octal escapes (\040 for a space,
// \011, \012, \134) in a mountinfo path.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// exposures returns the paths at which the mounts in entries show the
// directory src (which lives at srcInFS in the filesystem dev) or part
// of it. The source's own path is among them.
func exposures(entries []mountEntry, major, minor uint32, srcInFS string) []string {
	var out []string
	for _, e := range entries {
		if e.Major != major || e.Minor != minor {
			continue
		}
		switch {
		case within(srcInFS, e.Root):
			rest := strings.TrimPrefix(srcInFS, e.Root)
			if e.Root == "/" {
				rest = srcInFS
			}
			out = append(out, joinAbs(e.Point, rest))
		case within(e.Root, srcInFS):
			// A bind mount of something inside the source.
			out = append(out, e.Point)
		}
	}
	return out
}

func joinAbs(dir, rest string) string {
	rest = strings.TrimPrefix(rest, "/")
	switch {
	case rest == "":
		return dir
	case dir == "/":
		return "/" + rest
	}
	return dir + "/" + rest
}

// sourceInFS returns where the directory path lives inside its
// filesystem: the mount with the longest mount point above it on that
// device, its root, and the rest of the path.
func sourceInFS(entries []mountEntry, major, minor uint32, path string) (string, error) {
	best := -1
	for i, e := range entries {
		if e.Major != major || e.Minor != minor || !within(path, e.Point) {
			continue
		}
		if best < 0 || len(e.Point) >= len(entries[best].Point) {
			best = i
		}
	}
	if best < 0 {
		return "", fmt.Errorf("no mount of device %d:%d holds %s", major, minor, path)
	}
	e := entries[best]
	rest := strings.TrimPrefix(path, e.Point)
	if e.Point == "/" {
		rest = path
	}
	return joinAbs(e.Root, rest), nil
}
