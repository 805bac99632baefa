package observe

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// otelcolVersion is the OpenTelemetry Collector release the export tests
// run against: the collector's own otlp receiver and debug exporter, built
// from its Go modules (the distribution's main is what the collector's
// builder generates for these two components).
const otelcolVersion = "0.165.0"

// otelcolGoMod and otelcolMain are the distribution's module.
const otelcolGoMod = `module intentfs.test/otelcol

go 1.26

require (
	go.opentelemetry.io/collector/component v1.71.0
	go.opentelemetry.io/collector/confmap v1.71.0
	go.opentelemetry.io/collector/confmap/provider/fileprovider v1.71.0
	go.opentelemetry.io/collector/exporter v1.71.0
	go.opentelemetry.io/collector/exporter/debugexporter v0.165.0
	go.opentelemetry.io/collector/otelcol v0.165.0
	go.opentelemetry.io/collector/receiver v1.71.0
	go.opentelemetry.io/collector/receiver/otlpreceiver v0.165.0
	go.opentelemetry.io/collector/service v0.165.0
)
`

const otelcolMain = `// Command otelcol is an OpenTelemetry Collector with the otlp receiver
// and the debug exporter.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	var err error
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](debugexporter.NewFactory())
	return f, err
}

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "OpenTelemetry Collector for intentfs tests", Version: "` + otelcolVersion + `"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
`

// otelcolBuild is the collector binary, built once per test run (and
// once per machine: the binary is cached outside the repository).
var otelcolBuild struct {
	once      sync.Once
	path, why string
}

// otelcolBinary returns the collector, building it on first use into
// $HOME/.cache/intentfs-test/otelcol/<version>/. The test is skipped,
// saying why, only when its modules cannot be fetched.
func otelcolBinary(t *testing.T) string {
	t.Helper()
	otelcolBuild.once.Do(func() { otelcolBuild.path, otelcolBuild.why = buildOtelcol() })
	if otelcolBuild.path == "" {
		if strings.HasPrefix(otelcolBuild.why, "skip:") {
			t.Skip(strings.TrimPrefix(otelcolBuild.why, "skip:"))
		}
		t.Fatal(otelcolBuild.why)
	}
	return otelcolBuild.path
}

func buildOtelcol() (path, why string) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Sprintf("skip:skipping: no home directory for the collector's cache: %v", err)
	}
	// The binary is named by its sources, so a change to them builds a
	// new one rather than running a stale one.
	sum := sha256.Sum256([]byte(otelcolGoMod + otelcolMain))
	dir := filepath.Join(home, ".cache", "intentfs-test", "otelcol", otelcolVersion)
	bin := filepath.Join(dir, "otelcol-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", fmt.Sprintf("creating the collector's cache %s: %v", src, err)
	}
	for name, body := range map[string]string{"go.mod": otelcolGoMod, "main.go": otelcolMain} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			return "", fmt.Sprintf("writing the collector's %s: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// The build is CPU-heavy: it runs niced so that it does not starve
	// the mounts of the tests running beside it.
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "nice", append([]string{"-n", "10", "go"}, args...)...)
		cmd.Dir = src
		return cmd.CombinedOutput()
	}
	if out, err := run("mod", "tidy"); err != nil {
		return "", fmt.Sprintf("skip:skipping: the OpenTelemetry Collector %s's modules could not be fetched into %s: %v\n%s", otelcolVersion, src, err, out)
	}
	tmp := bin + ".tmp"
	if out, err := run("build", "-trimpath", "-o", tmp, "."); err != nil {
		return "", fmt.Sprintf("building the OpenTelemetry Collector %s in %s: %v\n%s", otelcolVersion, src, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Sprintf("installing the collector: %v", err)
	}
	return bin, ""
}

// collector is a running OpenTelemetry Collector whose debug exporter
// prints every log record it receives.
type collector struct {
	grpcAddr, httpAddr string
	mu                 sync.Mutex
	out                bytes.Buffer
	cmd                *exec.Cmd
	done               chan struct{}
}

// Write collects the collector's output.
func (c *collector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

// Output is what the collector printed so far.
func (c *collector) Output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startCollector runs the collector on free loopback ports until the test
// ends, and waits until both receivers listen.
func startCollector(t *testing.T) *collector {
	t.Helper()
	bin := otelcolBinary(t)
	c := &collector{grpcAddr: freeAddr(t), httpAddr: freeAddr(t), done: make(chan struct{})}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [debug]
`, c.grpcAddr, c.httpAddr)
	path := filepath.Join(t.TempDir(), "otelcol.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, "--config", "file:"+path)
	c.cmd.Stdout, c.cmd.Stderr = c, c
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting the collector: %v", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(c.stop)
	for _, addr := range []string{c.grpcAddr, c.httpAddr} {
		testenv.WaitFor(t, func() bool {
			select {
			case <-c.done:
				t.Fatalf("the collector exited:\n%s", c.Output())
			default:
			}
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false
			}
			conn.Close()
			return true
		}, "the collector listening on", addr)
	}
	return c
}

// stop ends the collector (its receivers stop listening).
func (c *collector) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
