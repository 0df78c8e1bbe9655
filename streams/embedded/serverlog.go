package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// serverLogger routes nats-server's log lines to slog. Notices, debug and
// trace lines are Debug (an embedded server is a detail of the engine, not
// something its user watches); warnings are Warn; errors are Error.
//
// Fatalf does not exit the process, unlike nats-server's own logger: the
// first fatal line is kept so Start can return it as an error.
type serverLogger struct {
	log *slog.Logger

	mu    sync.Mutex
	fatal string
	// writeErr is the first critical write error the store reported (a
	// full or failing disk): from then on the stream stores nothing.
	writeErr string
}

func newServerLogger(l *slog.Logger) *serverLogger {
	if l == nil {
		l = slog.Default()
	}
	return &serverLogger{log: l.With("component", "nats-server")}
}

// debugEnabled reports whether the server should produce debug lines at all;
// asking for them when slog drops them costs the server formatting work.
func (l *serverLogger) debugEnabled() bool {
	return l.log.Enabled(context.Background(), slog.LevelDebug)
}

// fatalError returns the first fatal line logged, or "".
func (l *serverLogger) fatalError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

func (l *serverLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *serverLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *serverLogger) Tracef(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *serverLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *serverLogger) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	// nats-server reports a store that cannot write only in its log.
	if strings.Contains(strings.ToLower(msg), "critical write error") {
		l.mu.Lock()
		if l.writeErr == "" {
			l.writeErr = msg
		}
		l.mu.Unlock()
	}
}

// storeError returns the first critical write error the store logged, or
// nil.
func (l *serverLogger) storeError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writeErr == "" {
		return nil
	}
	return fmt.Errorf("embedded: nats-server: %s", l.writeErr)
}

func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg, "fatal", true)
	l.mu.Lock()
	if l.fatal == "" {
		l.fatal = msg
	}
	l.mu.Unlock()
}
