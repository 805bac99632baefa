package container

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/otelexport"
)

func TestAuditExport(t *testing.T) {
	tests := []struct {
		name         string
		env          []string
		wantEndpoint string // "": no stream
		wantProtocol string
		wantSignal   bool
		wantErr      string // in the error; "" for none
	}{
		{"no audit variable", []string{"PATH=/usr/bin", "HOME=/root"}, "", "", false, ""},
		{"the base endpoint", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318"}, "http://collector:4318", otelexport.ProtocolHTTP, false, ""},
		{"the logs endpoint wins", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://a:4318", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=http://b:4318/logs"},
			"http://b:4318/logs", otelexport.ProtocolHTTP, true, ""},
		{"grpc", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, "http://collector:4317", otelexport.ProtocolGRPC, false, ""},
		{"service name and attributes alone stream nothing", []string{"OTEL_SERVICE_NAME=agents", "OTEL_RESOURCE_ATTRIBUTES=team=a"}, "", "", false, ""},
		// Only the audit stream's variables are read: lookalikes are not.
		{"a lookalike variable", []string{"XOTEL_EXPORTER_OTLP_ENDPOINT=http://x:1", "OTEL_EXPORTER_OTLPENDPOINT=http://x:1", "OTEL_TRACES_EXPORTER=otlp"}, "", "", false, ""},
		{"not a URL", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318"}, "", "", false, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"an unsupported protocol", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, "", "", false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"a control character in a header", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS=api-key=secret\r\nX-Evil: 1"}, "", "", false, "OTEL_EXPORTER_OTLP_HEADERS holds a control character"},
		{"an escape sequence in the service name", []string{"OTEL_SERVICE_NAME=a\x1b[2Jb"}, "", "", false, "OTEL_SERVICE_NAME holds a control character"},
		{"invalid UTF-8 in the attributes", []string{"OTEL_RESOURCE_ATTRIBUTES=a=\xff"}, "", "", false, "OTEL_RESOURCE_ATTRIBUTES"},
		// A control character elsewhere in the environment is none of
		// the audit stream's business.
		{"a control character in another variable", []string{"PS1=\x1b[1m$ ", "OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}, "http://c:4318", otelexport.ProtocolHTTP, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := auditExport(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("the error shows a header's value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantEndpoint == "" {
				if c != nil {
					t.Fatalf("a stream to %q, want none", c.Endpoint)
				}
				return
			}
			if c == nil || c.Endpoint != tt.wantEndpoint || c.Protocol != tt.wantProtocol || c.SignalEndpoint != tt.wantSignal || !c.FromEnv {
				t.Fatalf("config %+v, want endpoint %q protocol %q signal %v from the environment", c, tt.wantEndpoint, tt.wantProtocol, tt.wantSignal)
			}
		})
	}
}

func TestAgentEnvHoldsNoCollectorCredential(t *testing.T) {
	env := []string{
		"PATH=/usr/bin",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer secret",
		"OTEL_EXPORTER_OTLP_LOGS_HEADERS=authorization=Bearer secret2",
		"OTEL_SERVICE_NAME=agents",
		"INTENTFS_INTENT=INT-001",
		"MY_HEADERS=kept",
	}
	got := strings.Join(agentEnv(env), "\n")
	for _, want := range []string{"PATH=/usr/bin", "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "OTEL_SERVICE_NAME=agents", "MY_HEADERS=kept"} {
		if !strings.Contains(got, want) {
			t.Errorf("the agent's environment lacks %s:\n%s", want, got)
		}
	}
	for _, gone := range []string{"secret", "INTENTFS_INTENT"} {
		if strings.Contains(got, gone) {
			t.Errorf("the agent's environment holds %s:\n%s", gone, got)
		}
	}
}
