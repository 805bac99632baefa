package otelexport

import (
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name           string
		env            map[string]string
		flag, flagProt string
		wantURL        string // "" for no export
		wantProto      string
		wantErr        string
	}{
		{name: "nothing set exports nothing"},
		{name: "the flag", flag: "http://127.0.0.1:4318", wantURL: "http://127.0.0.1:4318/v1/logs", wantProto: ProtocolHTTP},
		{name: "the flag with a base path", flag: "https://otel.example:4318/ingest/", wantURL: "https://otel.example:4318/ingest/v1/logs", wantProto: ProtocolHTTP},
		{name: "the flag over grpc", flag: "http://127.0.0.1:4317", flagProt: "grpc", wantURL: "http://127.0.0.1:4317", wantProto: ProtocolGRPC},
		{name: "the generic variable", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			wantURL: "http://collector:4318/v1/logs", wantProto: ProtocolHTTP},
		{name: "the logs variable is used as is and wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
			"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://b:4318/custom/logs"}, wantURL: "http://b:4318/custom/logs", wantProto: ProtocolHTTP},
		{name: "the protocol variable", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			wantURL: "http://c:4317", wantProto: ProtocolGRPC},
		{name: "the logs protocol variable wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf"}, wantURL: "http://c:4318/v1/logs", wantProto: ProtocolHTTP},
		{name: "the flag wins over the variables", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			flag: "http://flag:4318", flagProt: "http", wantURL: "http://flag:4318/v1/logs", wantProto: ProtocolHTTP},
		{name: "credentials and query are not shown", flag: "https://user:secret@otel.example/?token=x", wantURL: "https://otel.example/v1/logs", wantProto: ProtocolHTTP},
		{name: "http/json is refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL is \"http/json\""},
		{name: "a bare host is refused", flag: "localhost:4318", wantErr: "--otlp-endpoint is \"localhost:4318\": it must be a URL"},
		{name: "a protocol without an endpoint", flagProt: "grpc", wantErr: "--otlp-protocol needs an endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Resolve(func(k string) string { return tc.env[k] }, tc.flag, tc.flagProt)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantURL == "" {
				if c != nil {
					t.Fatalf("config %+v, want none", c)
				}
				return
			}
			if c == nil || c.URL() != tc.wantURL || c.Protocol != tc.wantProto {
				t.Fatalf("config %+v (url %q), want %s over %s", c, c.URL(), tc.wantURL, tc.wantProto)
			}
		})
	}
}
