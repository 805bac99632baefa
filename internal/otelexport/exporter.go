// Package otelexport sends the ledger's records to an OpenTelemetry
// Collector (or any OTLP receiver) as OTLP log records described in OCSF
// File System Activity terms, through the OpenTelemetry Go SDK.
//
// The ledger is the record; the stream is a copy for the tools a team
// already runs, and it never slows the mount. Records are offered from
// the ledger writer once they are on disk, into a bounded queue that
// never blocks: what does not fit is dropped and counted. A worker moves
// records from the queue into the SDK's batch processor, never more at
// once than the processor's own queue holds, so the processor never
// drops one silently: every record offered is, in the end, exported,
// failed (the receiver did not take it after retries) or dropped, and
// Stats says how many of each.
package otelexport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"

	"github.com/intentfs/intentfs/ledger"
)

// QueueSize bounds the records waiting to be handed to the SDK; past it,
// records are dropped. With the SDK's own queue, a burst of about six
// thousand records (an untar) is carried through a slow receiver.
const QueueSize = 4096

// sdkQueueSize is the batch processor's queue: the records handed to the
// SDK and not yet exported or failed.
const sdkQueueSize = 2048

// maxAttributeLength bounds an attribute's value (a denial's reason, a
// command line).
const maxAttributeLength = 4096

// httpTimeout bounds one OTLP/HTTP export, as the SDK's default does.
const httpTimeout = 10 * time.Second

// ShutdownTimeout bounds the flush at unmount.
const ShutdownTimeout = 5 * time.Second

// A batch is retried while the receiver is down or refuses it, for at
// most retryElapsed: past it, its records are counted as failed, and the
// queue behind it drops what does not fit meanwhile.
const (
	retryInitial = time.Second
	retryMax     = 5 * time.Second
	retryElapsed = 15 * time.Second
)

// Stats are the exporter's counters, for status.
type Stats struct {
	// Endpoint is where records go (without credentials); Protocol is
	// http/protobuf or grpc.
	Endpoint string `json:"endpoint"`
	Protocol string `json:"protocol"`
	// Exported counts the records the receiver accepted; Failed those it
	// did not take after retries (down, refusing); Dropped those never
	// sent because the queue was full, or left when the mount ended.
	Exported uint64 `json:"exported"`
	Failed   uint64 `json:"failed"`
	Dropped  uint64 `json:"dropped"`
	// Queued counts the records on their way.
	Queued uint64 `json:"queued"`
	// LastError is the last export's error while exports fail.
	LastError string `json:"last_error,omitempty"`
}

// Exporter streams ledger records to an OTLP receiver.
type Exporter struct {
	cfg      Config
	log      *slog.Logger
	provider *sdklog.LoggerProvider
	logger   log.Logger

	queue chan *ledger.Record
	// slots holds one token per record handed to the SDK and not yet
	// exported or failed; its capacity is the SDK's queue.
	slots chan struct{}

	stop, abort, done chan struct{}
	closed            atomic.Bool
	finished          atomic.Bool
	shutdownOnce      sync.Once
	shutdownErr       error

	offered, emitted, exported, failed, dropped atomic.Uint64
	failing                                     atomic.Bool
	lastErr                                     atomic.Pointer[string]
}

// New starts an exporter for cfg. Nothing is sent before the first
// record, so an unreachable receiver does not fail the mount.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Exporter, error) {
	inner, err := newOTLPExporter(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the OTLP exporter for %s: %w", cfg.URL(), err)
	}
	return start(ctx, cfg, inner, logger, QueueSize), nil
}

func newOTLPExporter(ctx context.Context, cfg Config) (sdklog.Exporter, error) {
	check := newListenerCheck(cfg.MountUIDs)
	switch cfg.Protocol {
	case ProtocolGRPC:
		opts := []otlploggrpc.Option{otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: true,
			InitialInterval: retryInitial, MaxInterval: retryMax, MaxElapsedTime: retryElapsed}),
			otlploggrpc.WithDialOption(grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return check.dial(ctx, "tcp", addr)
			}))}
		if !cfg.FromEnv {
			opts = append(opts, otlploggrpc.WithEndpointURL(cfg.Endpoint))
		}
		return otlploggrpc.New(ctx, opts...)
	case ProtocolHTTP:
		opts := []otlploghttp.Option{otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: true,
			InitialInterval: retryInitial, MaxInterval: retryMax, MaxElapsedTime: retryElapsed})}
		if !cfg.FromEnv {
			// The SDK takes a URL's path as is; --otlp-endpoint is a base
			// URL, like OTEL_EXPORTER_OTLP_ENDPOINT.
			opts = append(opts, otlploghttp.WithEndpointURL(cfg.URL()))
		}
		if !strings.HasPrefix(strings.ToLower(cfg.Endpoint), "https://") {
			// In plain text nothing but the listener's owner says who
			// receives the headers. Over TLS the server's certificate
			// does, and the SDK's own client keeps the certificate
			// settings (OTEL_EXPORTER_OTLP_CERTIFICATE), which a client
			// of ours would replace.
			transport := http.DefaultTransport.(*http.Transport).Clone()
			transport.DialContext = check.dial
			opts = append(opts, otlploghttp.WithHTTPClient(&http.Client{Transport: transport, Timeout: httpTimeout}))
		}
		return otlploghttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("unknown OTLP protocol %q", cfg.Protocol)
}

// start runs an exporter over inner with a queue of queueSize records.
func start(ctx context.Context, cfg Config, inner sdklog.Exporter, logger *slog.Logger, queueSize int) *Exporter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Exporter{cfg: cfg, log: logger, queue: make(chan *ledger.Record, queueSize), slots: make(chan struct{}, sdkQueueSize),
		stop: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{})}
	bp := sdklog.NewBatchProcessor(&counting{inner: inner, e: e}, sdklog.WithMaxQueueSize(sdkQueueSize),
		sdklog.WithExportMaxBatchSize(512), sdklog.WithExportInterval(time.Second))
	e.provider = sdklog.NewLoggerProvider(sdklog.WithResource(cfg.resource(ctx)), sdklog.WithProcessor(bp),
		sdklog.WithAttributeValueLengthLimit(maxAttributeLength))
	e.logger = e.provider.Logger("github.com/intentfs/intentfs/ledger")
	go e.run()
	return e
}

// resource names the mount: intentfs, its version, the host and the
// source; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply on top.
func (c *Config) resource(ctx context.Context) *resource.Resource {
	attrs := []attribute.KeyValue{attribute.String("service.name", "intentfs")}
	for k, v := range map[string]string{"service.version": c.ServiceVersion, "intentfs.source": c.Source, "intentfs.mountpoint": c.Mountpoint} {
		if v != "" {
			attrs = append(attrs, attribute.String(k, valid(v)))
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithHost(), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && res == nil {
		return resource.NewSchemaless(attrs...)
	}
	return res
}

// Offer queues a committed record for export without ever waiting: a
// full queue drops it, and counts it.
func (e *Exporter) Offer(r *ledger.Record) {
	e.offered.Add(1)
	if e.closed.Load() {
		e.dropped.Add(1)
		return
	}
	select {
	case e.queue <- r:
	default:
		e.dropped.Add(1)
	}
}

func (e *Exporter) run() {
	defer close(e.done)
	for {
		select {
		case r := <-e.queue:
			e.emit(r)
		case <-e.stop:
			for {
				select {
				case r := <-e.queue:
					e.emit(r)
				default:
					return
				}
			}
		}
	}
}

// emit hands r to the SDK once its queue has room for it.
func (e *Exporter) emit(r *ledger.Record) {
	select {
	case e.slots <- struct{}{}:
	case <-e.abort:
		e.dropped.Add(1)
		return
	}
	e.emitted.Add(1)
	rec := LogRecord(r, e.cfg.Fields)
	e.logger.Emit(context.Background(), rec)
}

// Stats returns the counters.
func (e *Exporter) Stats() Stats {
	s := Stats{Endpoint: e.cfg.URL(), Protocol: e.cfg.Protocol, Exported: e.exported.Load(), Failed: e.failed.Load(), Dropped: e.dropped.Load()}
	// Offered is read last: every record is counted there before it is
	// counted anywhere else, so this never goes below zero.
	s.Queued = e.offered.Load() - s.Exported - s.Failed - s.Dropped
	if e.failing.Load() {
		if p := e.lastErr.Load(); p != nil {
			s.LastError = *p
		}
	}
	return s
}

// Shutdown sends what is queued, waiting at most until ctx ends, and
// stops. Records not exported by then are counted as dropped.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.shutdownOnce.Do(func() {
		e.closed.Store(true)
		close(e.stop)
		select {
		case <-e.done:
		case <-ctx.Done():
			close(e.abort)
			<-e.done
		}
		err := e.provider.Shutdown(ctx)
		e.finished.Store(true)
		if left := e.emitted.Load() - e.exported.Load() - e.failed.Load(); left > 0 {
			e.dropped.Add(left)
			e.log.Warn("the audit stream ended with records not exported", "records", left, "endpoint", e.cfg.URL())
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			e.shutdownErr = fmt.Errorf("shutting down the OTLP export to %s: %w", e.cfg.URL(), err)
		}
	})
	return e.shutdownErr
}

// counting wraps the OTLP exporter: it counts what each export did and
// frees the records' slots.
type counting struct {
	inner sdklog.Exporter
	e     *Exporter
}

func (c *counting) Export(ctx context.Context, recs []sdklog.Record) error {
	err := c.inner.Export(ctx, recs)
	e := c.e
	if !e.finished.Load() {
		if err != nil {
			e.failed.Add(uint64(len(recs)))
			msg := err.Error()
			e.lastErr.Store(&msg)
			if !e.failing.Swap(true) {
				e.log.Warn("the audit stream cannot be exported; records are counted as failed until it can", "endpoint", e.cfg.URL(), "err", err)
			}
		} else {
			e.exported.Add(uint64(len(recs)))
			if e.failing.Swap(false) {
				e.log.Info("the audit stream is exported again", "endpoint", e.cfg.URL())
			}
		}
	}
	for range recs {
		select {
		case <-e.slots:
		default:
		}
	}
	return err
}

func (c *counting) Shutdown(ctx context.Context) error   { return c.inner.Shutdown(ctx) }
func (c *counting) ForceFlush(ctx context.Context) error { return c.inner.ForceFlush(ctx) }
