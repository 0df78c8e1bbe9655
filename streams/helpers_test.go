package streams_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams/embedded"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// testTimeout bounds every wait in these tests; hitting it fails the test.
const testTimeout = 20 * time.Second

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// startBare starts an embedded server that nothing has provisioned yet.
func startBare(t testing.TB) (*embedded.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	env := streamstest.StartBare(t)
	return env.Server, env.Conn, env.JS
}

func quietLogger() *slog.Logger {
	return slog.New(slog.DiscardHandler)
}

// logRecorder is a slog handler that keeps "LEVEL message" lines.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func recordLogs() (*slog.Logger, *logRecorder) {
	r := &logRecorder{}
	return slog.New(r), r
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, line)
	r.mu.Unlock()
	return nil
}

// matching returns the recorded lines that contain every one of words.
func (r *logRecorder) matching(words ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
next:
	for _, l := range r.lines {
		for _, w := range words {
			if !strings.Contains(l, w) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}
