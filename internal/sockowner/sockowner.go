// Package sockowner tells who owns the other end of a loopback TCP
// connection, from the kernel's socket table (/proc/self/net/tcp{,6}), as
// identd did: the web UI refuses connections from other users' processes,
// and the audit stream refuses to send to a listener another user holds.
package sockowner

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// PeerUID finds the owner of a loopback TCP connection's other end in
// the kernel's socket table: the row whose local address is the peer's
// and whose remote address is ours. A connection accepted by a listening
// socket belongs to the listener's owner, even before it is accepted, so
// for a connection made it is the owner of the listener reached.
func PeerUID(c net.Conn) (uint32, error) {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return 0, errors.New("not a TCP connection")
	}
	if !remote.IP.IsLoopback() {
		return 0, fmt.Errorf("%s is not a loopback address", remote.IP)
	}
	table := "/proc/self/net/tcp6"
	if remote.IP.To4() != nil && local.IP.To4() != nil {
		table = "/proc/self/net/tcp"
	}
	want := [2]string{procAddr(remote.AddrPort()), procAddr(local.AddrPort())}
	return socketOwner(table, want)
}

// procAddr writes an address as /proc/net/tcp does: the address's 32-bit
// words in the machine's byte order, in hex, then the port.
func procAddr(ap netip.AddrPort) string {
	a := ap.Addr().Unmap()
	var b strings.Builder
	if a.Is4() {
		v := a.As4()
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(v[:]))
	} else {
		v := a.As16()
		for i := 0; i < 16; i += 4 {
			fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(v[i:i+4]))
		}
	}
	fmt.Fprintf(&b, ":%04X", ap.Port())
	return b.String()
}

// maxSocketRows bounds the table read: a busy machine has many sockets,
// but not millions.
const maxSocketRows = 1 << 20

// socketOwner returns the uid column of the row of table whose local and
// remote addresses are want.
func socketOwner(table string, want [2]string) (uint32, error) {
	f, err := os.Open(table)
	if err != nil {
		return 0, fmt.Errorf("reading the socket table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan() && n < maxSocketRows; n++ {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1] != want[0] || fields[2] != want[1] {
			continue
		}
		uid, err := strconv.ParseUint(fields[7], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("reading the socket table %s: %w", table, err)
		}
		return uint32(uid), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading the socket table %s: %w", table, err)
	}
	return 0, fmt.Errorf("the connecting socket %s is not in %s", want[0], table)
}
