package container

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/intentfs/intentfs/internal/otelexport"
)

// isAuditVar says whether the environment variable key configures the
// daemon's audit stream: the OTLP exporter's settings (endpoint,
// protocol, headers, certificates, timeout), and the service name and
// resource attributes its records carry.
func isAuditVar(key string) bool {
	return strings.HasPrefix(key, "OTEL_EXPORTER_OTLP_") || key == "OTEL_SERVICE_NAME" || key == "OTEL_RESOURCE_ATTRIBUTES"
}

// isAuditCredential says whether kv sets the OTLP exporter's headers
// (OTEL_EXPORTER_OTLP_HEADERS, or one signal's: _LOGS_HEADERS, ...), where
// a collector's credential goes.
func isAuditCredential(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	return strings.HasPrefix(k, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(k, "HEADERS")
}

// auditExport decides, from the container's environment (docker run -e
// OTEL_EXPORTER_OTLP_ENDPOINT=...), where the daemon streams the ledger,
// as intentfs mount does from its own; nil: nowhere. Only the audit
// stream's variables are read, and each must be plain text: a control
// character in one would reach the collector's requests and logs.
func auditExport(env []string) (*otelexport.Config, error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !isAuditVar(k) {
			continue
		}
		if !plainText(v) {
			// The value is not shown: a header may hold a credential.
			return nil, fmt.Errorf("the container's %s holds a control character or is not UTF-8: set it to plain text (docker run -e %s=...), or unset it", k, k)
		}
		vars[k] = v
	}
	c, err := otelexport.Resolve(func(k string) string { return vars[k] }, "", "")
	if err != nil {
		return nil, fmt.Errorf("the container's audit stream: %w", err)
	}
	return c, nil
}

// plainText reports whether s is UTF-8 without control characters.
func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
