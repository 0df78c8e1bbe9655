// Package enginetest starts engines for tests: on a connection to a
// server from package streamstest, quiet, and closed when the test ends.
package enginetest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
)

// QuietLog shows warnings and errors only: a test run should not print a
// record per instance.
var QuietLog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// Open starts an engine on nc with opts (QuietLog unless opts has a
// logger) and closes it when the test ends; closing it earlier is fine.
func Open(t testing.TB, nc *nats.Conn, opts engine.Options) *engine.Engine {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = QuietLog
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eng, err := engine.Open(ctx, nc, opts)
	if err != nil {
		t.Fatalf("enginetest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Close(ctx) // a test may have closed it already
	})
	return eng
}
