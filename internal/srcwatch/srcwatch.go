// Package srcwatch reports changes made to the files under a directory,
// whoever makes them, as (directory, name) pairs relative to it. It reads
// fanotify events of the directory's whole filesystem reported by parent
// directory handle and name (FAN_REPORT_DFID_NAME), so no mark is needed
// per directory; events outside the directory are dropped.
//
// It needs CAP_SYS_ADMIN (a filesystem mark) and CAP_DAC_READ_SEARCH
// (resolving handles), and a filesystem that reports file handles (ext4,
// xfs, btrfs, tmpfs since Linux 6.7); New says why when it cannot watch.
package srcwatch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Kind says what an event reports.
type Kind uint8

const (
	// Entry: a name in Dir was created, removed or moved (Name is it).
	Entry Kind = iota
	// Content: the data of Dir/Name changed (Name "" for Dir itself).
	Content
	// Attr: the attributes of Dir/Name changed, not its data.
	Attr
	// Overflow: the kernel's queue overflowed and events were lost;
	// anything may have changed.
	Overflow
)

// Event is one change under the watched directory. Dir is relative to it
// ("" for the directory itself).
type Event struct {
	Kind Kind
	Dir  string
	Name string
	// Pid is the process that made the change (0 for Overflow).
	Pid int
}

// The events watched: every change of a name, of data or of attributes,
// on files and directories alike.
const watchMask = unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO |
	unix.FAN_MODIFY | unix.FAN_ATTRIB | unix.FAN_ONDIR

// maxCachedDirs bounds the directory handles remembered with their paths
// (or as being outside the watched directory).
const maxCachedDirs = 1 << 14

// Watcher watches one directory.
type Watcher struct {
	root   string // the watched directory, canonical
	rootFd int    // a descriptor of it, to resolve handles against
	f      *os.File

	mu sync.Mutex
	// dirs maps a directory handle to its path relative to root, or to
	// outside. A directory move clears it (paths below it change).
	dirs map[string]string
}

const outside = "\x00"

// New watches root, which must be a canonical absolute path.
func New(root string) (*Watcher, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME,
		unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fanotify_init: %w", err)
	}
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, watchMask, unix.AT_FDCWD, root); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watching the filesystem of %s (fanotify_mark): %w", root, err)
	}
	// open_by_handle_at takes no O_PATH descriptor as its mount.
	rootFd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("opening %s: %w", root, err)
	}
	w := &Watcher{root: root, rootFd: rootFd, f: os.NewFile(uintptr(fd), "fanotify"), dirs: map[string]string{}}
	// Resolving a handle needs CAP_DAC_READ_SEARCH: find out now, on the
	// root's own handle, rather than drop every event later.
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, root, 0)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("%s has no file handles (name_to_handle_at): %w", root, err)
	}
	if rel, ok := w.resolve(h); !ok || rel != "" {
		w.Close()
		return nil, fmt.Errorf("cannot resolve file handles under %s (open_by_handle_at needs CAP_DAC_READ_SEARCH)", root)
	}
	return w, nil
}

// Close stops the watch; a Run in progress returns.
func (w *Watcher) Close() error {
	unix.Close(w.rootFd)
	return w.f.Close()
}

// Run reads events until ctx is done or the watcher is closed, and
// hands them to handle in batches: all that one read returned, in order.
func (w *Watcher) Run(ctx context.Context, handle func([]Event)) error {
	go func() { <-ctx.Done(); w.f.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return fmt.Errorf("reading fanotify events: %w", err)
		}
		if evs := w.decode(buf[:n]); len(evs) > 0 {
			handle(evs)
		}
	}
}

// metadataLen is the size of struct fanotify_event_metadata.
const metadataLen = 24

// decode turns one read's worth of events into Events under root.
func (w *Watcher) decode(b []byte) []Event {
	var evs []Event
	for len(b) >= metadataLen {
		evLen := binary.NativeEndian.Uint32(b[0:])
		if evLen < metadataLen || int(evLen) > len(b) {
			break
		}
		metaLen := binary.NativeEndian.Uint16(b[6:])
		mask := binary.NativeEndian.Uint64(b[8:])
		fd := int32(binary.NativeEndian.Uint32(b[16:]))
		pid := int(int32(binary.NativeEndian.Uint32(b[20:])))
		if fd >= 0 {
			unix.Close(int(fd)) // not asked for; never expected with FID reports
		}
		if mask&unix.FAN_Q_OVERFLOW != 0 {
			evs = append(evs, Event{Kind: Overflow})
		} else if metaLen <= uint16(evLen) {
			evs = w.appendEvents(evs, mask, pid, b[metaLen:evLen])
		}
		b = b[evLen:]
	}
	return evs
}

// appendEvents decodes the information records of one event.
func (w *Watcher) appendEvents(evs []Event, mask uint64, pid int, info []byte) []Event {
	for len(info) >= 4 {
		typ, l := info[0], int(binary.NativeEndian.Uint16(info[2:]))
		if l < 4 || l > len(info) {
			break
		}
		rec := info[4:l]
		info = info[l:]
		if typ != unix.FAN_EVENT_INFO_TYPE_DFID_NAME && typ != unix.FAN_EVENT_INFO_TYPE_DFID {
			continue
		}
		// fsid (8 bytes), then struct file_handle, then the name.
		if len(rec) < 16 {
			continue
		}
		hb := int(binary.NativeEndian.Uint32(rec[8:]))
		ht := int32(binary.NativeEndian.Uint32(rec[12:]))
		if 16+hb > len(rec) {
			continue
		}
		name := ""
		if typ == unix.FAN_EVENT_INFO_TYPE_DFID_NAME {
			nb := rec[16+hb:]
			if i := indexNul(nb); i >= 0 {
				nb = nb[:i]
			}
			name = string(nb)
		}
		if mask&unix.FAN_ONDIR != 0 && mask&(unix.FAN_MOVED_FROM|unix.FAN_MOVED_TO|unix.FAN_DELETE) != 0 {
			// A directory moved or went: paths remembered below it may
			// be wrong now.
			w.mu.Lock()
			clear(w.dirs)
			w.mu.Unlock()
		}
		dir, ok := w.resolve(unix.NewFileHandle(ht, rec[16:16+hb]))
		if !ok {
			continue
		}
		if name == "." {
			name = "" // an event on the directory itself
		}
		// The kernel merges events on one name that are still queued:
		// a create and the writes after it are one event of both kinds.
		if mask&(unix.FAN_CREATE|unix.FAN_DELETE|unix.FAN_MOVED_FROM|unix.FAN_MOVED_TO) != 0 {
			evs = append(evs, Event{Kind: Entry, Dir: dir, Name: name, Pid: pid})
		}
		switch {
		case mask&unix.FAN_MODIFY != 0:
			evs = append(evs, Event{Kind: Content, Dir: dir, Name: name, Pid: pid})
		case mask&unix.FAN_ATTRIB != 0:
			evs = append(evs, Event{Kind: Attr, Dir: dir, Name: name, Pid: pid})
		}
	}
	return evs
}

func indexNul(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// resolve returns the path of the directory a handle names, relative to
// root, and false when it is outside root or gone.
func (w *Watcher) resolve(h unix.FileHandle) (string, bool) {
	key := strconv.Itoa(int(h.Type())) + ":" + string(h.Bytes())
	w.mu.Lock()
	rel, ok := w.dirs[key]
	w.mu.Unlock()
	if ok {
		return rel, rel != outside
	}
	rel = outside
	if fd, err := unix.OpenByHandleAt(w.rootFd, h, unix.O_PATH|unix.O_CLOEXEC); err == nil {
		p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		unix.Close(fd)
		switch {
		case err != nil || strings.HasSuffix(p, " (deleted)"):
			return "", false // gone: nothing to remember
		case p == w.root:
			rel = ""
		case strings.HasPrefix(p, w.root+"/"):
			rel = p[len(w.root)+1:]
		}
	} else if !errors.Is(err, unix.ESTALE) && !errors.Is(err, unix.ENOENT) {
		return "", false
	}
	w.mu.Lock()
	if len(w.dirs) >= maxCachedDirs {
		clear(w.dirs)
	}
	w.dirs[key] = rel
	w.mu.Unlock()
	return rel, rel != outside
}
