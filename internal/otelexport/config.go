package otelexport

import (
	"fmt"
	"net/url"
	"strings"
)

// Protocols.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config says where the audit stream goes.
type Config struct {
	// Endpoint is the OTLP receiver as the user gave it: a URL. For
	// OTLP/HTTP it is the base URL, to which /v1/logs is added, as for
	// OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string
	// SignalEndpoint says that Endpoint came from
	// OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: the full URL, used as is.
	SignalEndpoint bool
	// FromEnv says that Endpoint came from the environment, so the SDK's
	// own reading of the OTEL_EXPORTER_OTLP_* variables applies unchanged.
	FromEnv bool
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
	Fields   Fields
	// Source and Mountpoint name the mount in the resource of every
	// record; ServiceVersion is the intentfs build.
	Source, Mountpoint, ServiceVersion string
	// MountUIDs are the users, besides root and the daemon's own, whose
	// loopback listener may receive the stream: the user who mounted.
	MountUIDs []uint32
}

// Resolve decides whether and where to export: flagEndpoint and
// flagProtocol (intentfs mount --otlp-endpoint, --otlp-protocol) take
// precedence over the standard variables, read through getenv. It
// returns nil when no endpoint is set anywhere: nothing is exported.
func Resolve(getenv func(string) string, flagEndpoint, flagProtocol string) (*Config, error) {
	c := &Config{Endpoint: strings.TrimSpace(flagEndpoint)}
	if c.Endpoint == "" {
		if e := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")); e != "" {
			c.Endpoint, c.SignalEndpoint, c.FromEnv = e, true, true
		} else if e := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); e != "" {
			c.Endpoint, c.FromEnv = e, true
		}
	}
	if c.Endpoint == "" {
		if flagProtocol != "" {
			return nil, fmt.Errorf("--otlp-protocol needs an endpoint: pass --otlp-endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		return nil, nil
	}
	what, proto := "--otlp-protocol", flagProtocol
	if proto == "" {
		for _, v := range []string{"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
			if p := strings.TrimSpace(getenv(v)); p != "" {
				what, proto = v, p
				break
			}
		}
	}
	switch proto {
	case "", "http", ProtocolHTTP:
		c.Protocol = ProtocolHTTP
	case ProtocolGRPC:
		c.Protocol = ProtocolGRPC
	default:
		return nil, fmt.Errorf("%s is %q: intentfs exports OTLP as http/protobuf or grpc (http/json is not supported); set it to one of those", what, proto)
	}
	what = "--otlp-endpoint"
	if c.FromEnv {
		what = "OTEL_EXPORTER_OTLP_ENDPOINT"
		if c.SignalEndpoint {
			what = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
		}
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s is %q: it must be a URL such as http://localhost:4318 (OTLP/HTTP) or http://localhost:4317 (gRPC)", what, c.Endpoint)
	}
	return c, nil
}

// URL is where records are sent, without credentials or query: what
// status shows. For OTLP/HTTP it is the full logs URL.
func (c *Config) URL() string {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	if c.Protocol == ProtocolHTTP {
		u.Path = c.logsPath(u.Path)
	} else {
		u.Path = ""
	}
	u.RawPath = ""
	return u.String()
}

// logsPath is the URL path records are posted to: a signal endpoint's
// own path, else the base path with /v1/logs.
func (c *Config) logsPath(p string) string {
	if c.SignalEndpoint {
		return p
	}
	return strings.TrimSuffix(p, "/") + "/v1/logs"
}
