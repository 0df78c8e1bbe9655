package workerkit_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/workerkit"
)

// isReport tells a worker's report from its other publishes.
func isReport(m *nats.Msg) bool {
	return strings.HasPrefix(m.Subject, strings.TrimSuffix(streams.ReportsSubjects, ">"))
}

// failingReports fails the first n report publishes the way a stream
// without a leader does (no responders, at once), then passes them on.
type failingReports struct {
	jetstream.JetStream
	mu       sync.Mutex
	n        int
	attempts int
}

func (f *failingReports) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	f.mu.Lock()
	f.attempts++
	fail := isReport(m) && f.n > 0
	if fail {
		f.n--
	}
	f.mu.Unlock()
	if fail {
		return nil, nats.ErrNoResponders
	}
	return f.JetStream.PublishMsg(ctx, m, opts...)
}

// TestReportOutlastsUnavailableStream checks a worker keeps its result
// while the reports stream cannot take it (a leader election after a node
// died): it retries the publish until the lock would expire instead of
// giving up after a few attempts, so the job is not run again.
func TestReportOutlastsUnavailableStream(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("flaky-nats", "flaky-nats")
	js := &failingReports{n: 5}
	var mu sync.Mutex
	calls := 0
	f.worker(func(w *workerkit.Worker) {
		workerkit.WrapJetStream(w, func(inner jetstream.JetStream) jetstream.JetStream { js.JetStream = inner; return js })
		w.Handle("flaky-nats", func(context.Context, *workerkit.Job) (map[string]any, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			return map[string]any{"lookup": "FOUND"}, nil
		})
	}, workerkit.Options{Logger: quietLog, VerdictTimeout: 200 * time.Millisecond})
	id := f.start("flaky-nats", nil)
	// The lock is the default minute, twice the wait: a report given up on
	// would complete the instance only after a second run.
	if v := f.wait(id); v.Status != instance.Completed || v.Variables["lookup"] != "FOUND" {
		t.Fatalf("instance = %+v, want completed with the worker's output", v)
	}
	mu.Lock()
	defer mu.Unlock()
	js.mu.Lock()
	defer js.mu.Unlock()
	if calls != 1 || js.n != 0 || js.attempts < 6 {
		t.Errorf("handler ran %d times, %d report publishes (%d failures left); want 1 run, the 5 failures and a publish that landed", calls, js.attempts, js.n)
	}
}

// strandingReports acknowledges the first report publish without sending
// it, as when a stored report is stranded on a dying node, and records the
// message id of every report publish.
type strandingReports struct {
	jetstream.JetStream
	mu  sync.Mutex
	ids []string
}

func (s *strandingReports) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if !isReport(m) {
		return s.JetStream.PublishMsg(ctx, m, opts...)
	}
	s.mu.Lock()
	s.ids = append(s.ids, m.Header.Get(jetstream.MsgIDHeader))
	first := len(s.ids) == 1
	s.mu.Unlock()
	if first {
		return &jetstream.PubAck{Stream: streams.ReportsStream, Sequence: 1}, nil
	}
	return s.JetStream.PublishMsg(ctx, m, opts...)
}

// TestReportCopyAfterVerdictTimeout checks that a report whose verdict does
// not come is published again as a new copy (a new message id), so a
// stranded first copy cannot keep the stream deduplicating the rest.
func TestReportCopyAfterVerdictTimeout(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("stranded", "stranded")
	js := &strandingReports{}
	f.worker(func(w *workerkit.Worker) {
		workerkit.WrapJetStream(w, func(inner jetstream.JetStream) jetstream.JetStream { js.JetStream = inner; return js })
		w.Handle("stranded", func(context.Context, *workerkit.Job) (map[string]any, error) {
			return map[string]any{"lookup": "FOUND"}, nil
		})
	}, workerkit.Options{Logger: quietLog, VerdictTimeout: 200 * time.Millisecond})
	if v := f.wait(f.start("stranded", nil)); v.Status != instance.Completed {
		t.Fatalf("instance = %+v, want completed", v)
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if len(js.ids) != 2 || js.ids[1] != js.ids[0]+":r1" {
		t.Errorf("report message ids %q, want the first and a new copy %q", js.ids, js.ids[0]+":r1")
	}
}

// lostLookup never answers the first consumer lookup, as when the request
// is lost with a dying server: only the lookup's own deadline ends it.
type lostLookup struct {
	jetstream.JetStream
	mu    sync.Mutex
	calls int
}

func (l *lostLookup) Consumer(ctx context.Context, stream, name string) (jetstream.Consumer, error) {
	l.mu.Lock()
	l.calls++
	first := l.calls == 1
	l.mu.Unlock()
	if first {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return l.JetStream.Consumer(ctx, stream, name)
}

// TestWorkerSurvivesLostConsumerLookup runs a worker whose context has a
// distant deadline: a lost consumer lookup must time out on its own and
// be tried again, not hold the worker until that deadline.
func TestWorkerSurvivesLostConsumerLookup(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("lookup-lost", "lookup-lost")
	js := &lostLookup{}
	w, err := workerkit.New(f.env.NewConn(t), workerkit.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	workerkit.WrapJetStream(w, func(inner jetstream.JetStream) jetstream.JetStream { js.JetStream = inner; return js })
	w.Handle("lookup-lost", func(context.Context, *workerkit.Job) (map[string]any, error) {
		return map[string]any{"lookup": "FOUND"}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if v := f.wait(f.start("lookup-lost", nil)); v.Status != instance.Completed {
		t.Fatalf("instance = %+v, want completed", v)
	}
}
