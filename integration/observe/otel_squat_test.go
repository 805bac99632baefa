package observe

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
)

// squatterPy listens where the collector should, as whoever runs it,
// writes every byte it receives to a file, and answers each request 200
// so that a sender would think its records delivered.
const squatterPy = `
import socket, sys, threading
host, port, out, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, port))
s.listen(16)
open(ready, "w").close()
lock = threading.Lock()
def serve(c):
    c.settimeout(5)
    try:
        while True:
            b = c.recv(65536)
            if not b:
                return
            with lock, open(out, "ab") as f:
                f.write(b)
            if b"\r\n\r\n" in b:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
    except Exception:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`

// TestOTLPExportRefusesAListenerSquattingTheCollectorPort: with the
// collector down, the agent (uid 1000) binds its loopback port. The
// daemon sends it nothing, neither the headers (a bearer token) nor the
// records, and status counts the records as failed, naming the
// listener's owner.
func TestOTLPExportRefusesAListenerSquattingTheCollectorPort(t *testing.T) {
	// Serial: its listener binds a loopback port freed a moment before, which a listener of any other test on the machine can take first.
	testenv.Serial(t)
	python := testenv.SystemPython(t)
	for _, tc := range []struct {
		name string
		// env and args point the mount at endpoint.
		env, args func(endpoint string) []string
	}{
		{name: "http", env: func(string) []string { return nil }, args: func(ep string) []string { return []string{"--otlp-endpoint", ep} }},
		{name: "grpc", env: func(ep string) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + ep, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}
		}, args: func(string) []string { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			host, port, _ := net.SplitHostPort(addr)
			dir, err := os.MkdirTemp("", "otlp-squat")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			script, got, ready := filepath.Join(dir, "squat.py"), filepath.Join(dir, "received"), filepath.Join(dir, "ready")
			if err := os.WriteFile(script, []byte(squatterPy), 0o644); err != nil {
				t.Fatal(err)
			}
			sq := exec.Command("setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", python, script, host, port, got, ready)
			if err := sq.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sq.Process.Kill(); sq.Wait() })
			testenv.WaitFor(t, func() bool { _, err := os.Stat(ready); return err == nil }, "the squatter listening")
			endpoint := "http://" + addr
			c, _, ws := exportMount(t, append(tc.env(endpoint), "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer SECRET-TOKEN-1234"), tc.args(endpoint)...)
			if out, err := agentSh(ws, "echo hello > src/squat.txt"); err != nil {
				t.Fatalf("the agent's write: %v\n%s", err, out)
			}
			var st control.Status
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
				st = exportStatus(t, c, ws)
				if st.Export.Failed > 0 || st.Export.Exported > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("status never counted the record as exported or failed: %+v", *st.Export)
				}
			}
			b, _ := os.ReadFile(got)
			if len(b) > 0 {
				t.Errorf("the listener of uid 1000 received %d bytes from the daemon (token sent: %v):\n%.300s", len(b), strings.Contains(string(b), "SECRET-TOKEN-1234"), b)
			}
			if st.Export.Exported != 0 || st.Export.Failed == 0 || !strings.Contains(st.Export.LastError, "belongs to uid 1000, not root or the mounting user") {
				t.Errorf("status export with a squatter: %+v; want the records failed, naming uid 1000 as the listener's owner", *st.Export)
			}
		})
	}
}
