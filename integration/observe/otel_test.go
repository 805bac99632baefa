package observe

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
)

// exportMount mounts a fresh repository with the CLI, passing env and
// args, with src/, docs/ and lib/ writable by uid 1000 (the agent), and
// unmounts at the end of the test. INT-001 owns src/ and docs/api.md, and
// nothing in lib/ (where a new file is not even a save's temporary).
func exportMount(t *testing.T, env []string, args ...string) (c *testenv.CLI, repo, ws string) {
	t.Helper()
	c, repo, ws = testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	for _, d := range []string{c.Dir, repo} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"src", "docs", "lib"} {
		if err := os.Mkdir(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(repo, d), 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := c.RunEnv(env, append([]string{"mount", repo, ws, "--intent", "INT-001"}, args...)...); code != 0 {
		t.Fatalf("mount: exit %d\n%s", code, out)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(ws, ".intentfs")); err == nil {
			c.Run("unmount", ws)
			_ = syscall.Unmount(ws, syscall.MNT_DETACH)
		}
	})
	return c, repo, ws
}

// agentSh runs script as uid 1000 in dir (a mount).
func agentSh(dir, script string) (string, error) {
	out, err := testenv.CommandIn(dir, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", script).CombinedOutput()
	return string(out), err
}

// exportStatus is the mount's status, read with `intentfs status --json`.
func exportStatus(t *testing.T, c *testenv.CLI, ws string) control.Status {
	t.Helper()
	var st control.Status
	if err := json.Unmarshal([]byte(c.Must("status", "--json", "--mount", ws)), &st); err != nil {
		t.Fatal(err)
	}
	if st.Export == nil {
		t.Fatalf("status --json has no export although an endpoint was given")
	}
	return st
}

// logRecordWith returns the collector's printout of the first log
// record whose lines include every one of want, "" if none does yet.
func logRecordWith(out string, want ...string) string {
	for _, block := range strings.Split(out, "LogRecord #")[1:] {
		ok := true
		for _, w := range want {
			if !strings.Contains(block, w) {
				ok = false
				break
			}
		}
		if ok {
			return block
		}
	}
	return ""
}

// TestOTLPExportReachesTheCollector: a write made by the agent through
// the mount reaches a real OpenTelemetry Collector within seconds, over
// OTLP/HTTP (--otlp-endpoint) and gRPC (the standard variables), as an
// OCSF File System Activity log record naming the path and the intent;
// a refused write arrives as a blocked one; command lines stay home.
func TestOTLPExportReachesTheCollector(t *testing.T) {
	// Serial: it runs a collector on loopback ports freed a moment before, which any other test's listener can take first, and waits 20 s at most for a record.
	testenv.Serial(t)
	col := startCollector(t)
	for _, tc := range []struct {
		name, file, protocol, endpoint string
		env, args                      []string
	}{
		{name: "http flag", file: "src/otel-http.txt", protocol: "http/protobuf", endpoint: "http://" + col.httpAddr + "/v1/logs",
			args: []string{"--otlp-endpoint", "http://" + col.httpAddr}},
		{name: "grpc variables", file: "src/otel-grpc.txt", protocol: "grpc", endpoint: "http://" + col.grpcAddr,
			env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.grpcAddr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
				"OTEL_EXPORTER_OTLP_HEADERS=x-team-token=not-shown-anywhere"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, repo, ws := exportMount(t, tc.env, tc.args...)
			if out, err := agentSh(ws, "echo hello > "+tc.file+" && echo again >> "+tc.file); err != nil {
				t.Fatalf("the agent's write: %v\n%s", err, out)
			}
			refused := "lib/NOTES-" + strings.ReplaceAll(tc.name, " ", "-") + ".md"
			if out, err := agentSh(ws, "echo no > "+refused); err == nil {
				t.Fatalf("a write outside the scope was allowed: %s", out)
			}
			var rec string
			deadline := time.Now().Add(20 * time.Second)
			for rec == "" && time.Now().Before(deadline) {
				rec = logRecordWith(col.Output(), "-> file.path: Str("+tc.file+")", "-> intentfs.event: Str(write)")
				time.Sleep(50 * time.Millisecond)
			}
			if rec == "" {
				t.Fatalf("the collector received no record of the write of %s within 20s:\n%s", tc.file, col.Output())
			}
			for _, want := range []string{
				"-> class_uid: Int(1001)", "-> class_name: Str(File System Activity)",
				"-> activity_id: Int(3)", "-> activity_name: Str(Update)", "-> type_uid: Int(100103)",
				"-> intentfs.intent: Str(INT-001)", "-> status: Str(Success)", "-> disposition: Str(Allowed)",
				"-> file_result.path: Str(" + tc.file + ")", "-> actor.user.uid: Str(1000)", "-> actor.process.name: Str(sh)",
				`"algorithm":"SHA-256"`, "SeverityText: INFO",
			} {
				if !strings.Contains(rec, want) {
					t.Errorf("the collector's record of the write lacks %q:\n%s", want, rec)
				}
			}
			out := col.Output()
			if !strings.Contains(out, "-> intentfs.source: Str("+repo+")") || !strings.Contains(out, "-> service.name: Str(intentfs)") {
				t.Errorf("the resource does not name the service and the source:\n%s", out)
			}
			// The refusal arrives too (denials are recorded at once).
			denied := ""
			for deadline := time.Now().Add(10 * time.Second); denied == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				denied = logRecordWith(col.Output(), "-> intentfs.event: Str(denied)", "-> file.path: Str("+refused+")")
			}
			if denied == "" {
				t.Fatalf("the collector received no record of the refused write of %s:\n%s", refused, col.Output())
			}
			for _, want := range []string{"-> disposition: Str(Blocked)", "-> status: Str(Failure)", "-> intentfs.code: Str(OUT_OF_SCOPE)",
				"-> activity_name: Str(Create)", "SeverityText: WARN"} {
				if !strings.Contains(denied, want) {
					t.Errorf("the collector's record of the refusal lacks %q:\n%s", want, denied)
				}
			}
			if strings.Contains(out, "cmd_line") || strings.Contains(out, "not-shown-anywhere") {
				t.Errorf("a command line or a header value left the machine:\n%s", out)
			}
			st := exportStatus(t, c, ws)
			if st.Export.Endpoint != tc.endpoint || st.Export.Protocol != tc.protocol || st.Export.Exported == 0 || st.Export.Dropped != 0 {
				t.Errorf("status export: %+v, want %s over %s with records exported", *st.Export, tc.endpoint, tc.protocol)
			}
			if human := c.Must("status", "--mount", ws); !strings.Contains(human, "export:     "+tc.endpoint+" (OTLP "+tc.protocol+"): ") {
				t.Errorf("status text lacks the export line:\n%s", human)
			}
			c.Must("unmount", ws)
			if out, code := c.Run("verify", "--source", repo); code != 0 {
				t.Errorf("verify after unmount: exit %d\n%s", code, out)
			}
		})
	}
}

// TestOTLPExportWithTheCollectorDown: with nothing listening at the
// endpoint, the agent's writes succeed as fast as ever, the ledger stays
// intact, and status counts the records that could not be exported.
func TestOTLPExportWithTheCollectorDown(t *testing.T) {
	// Serial: asserts ten writes take under 5 s, which a loaded machine stretches, and that nothing listens on a loopback port freed a moment before.
	testenv.Serial(t)
	endpoint := "http://" + freeAddr(t)
	c, repo, ws := exportMount(t, nil, "--otlp-endpoint", endpoint)
	began := time.Now()
	if out, err := agentSh(ws, "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > src/f$i.txt; done"); err != nil {
		t.Fatalf("writes with the collector down: %v\n%s", err, out)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("10 writes with the collector down took %v", took)
	}
	var st control.Status
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		st = exportStatus(t, c, ws)
		if st.Export.Failed+st.Export.Dropped > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never counted a failed or dropped record: %+v", *st.Export)
		}
	}
	if st.Export.Exported != 0 || st.Export.LastError == "" {
		t.Errorf("status export with the collector down: %+v", *st.Export)
	}
	if human := c.Must("status", "--mount", ws); !strings.Contains(human, "EXPORT FAILING (the ledger is unaffected)") {
		t.Errorf("status text does not say the export fails:\n%s", human)
	}
	began = time.Now()
	c.Must("unmount", ws)
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("unmount with the collector down took %v", took)
	}
	if out, code := c.Run("verify", "--source", repo); code != 0 {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
	if out := c.Must("log", "--source", repo, "--limit", "100"); !strings.Contains(out, "src/f10.txt") {
		t.Errorf("the ledger lacks the writes:\n%s", out)
	}
}
