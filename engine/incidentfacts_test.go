package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// factBook collects incident facts, de-duplicated by fact id (they are
// at-least-once), in arrival order.
type factBook struct {
	mu     sync.Mutex
	seen   map[string]bool
	facts  []incidents.Fact
	bad    []string
	notify chan struct{}
}

func newFactBook() *factBook {
	return &factBook{seen: map[string]bool{}, notify: make(chan struct{}, 1)}
}

// add records the fact in m; its subject must name its process and kind.
func (b *factBook) add(subject string, data []byte) {
	var f incidents.Fact
	err := json.Unmarshal(data, &f)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err != nil:
		b.bad = append(b.bad, fmt.Sprintf("%s: %v", subject, err))
	case subject != streams.FactSubject(streams.FactIncident, f.ProcessID, string(f.Kind)):
		b.bad = append(b.bad, fmt.Sprintf("fact %s of kind %s on subject %s", f.FactID, f.Kind, subject))
	case !b.seen[f.FactID]:
		b.seen[f.FactID] = true
		b.facts = append(b.facts, f)
	}
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// byIncident returns the kinds seen per incident, in order, and checks
// each fact's identity: fact id <incident>.<seq>, seq 1, 2, 3... gap-free.
func (b *factBook) byIncident(t testing.TB) map[string][]incidents.Kind {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.bad) > 0 {
		t.Fatalf("bad facts: %v", b.bad)
	}
	out := map[string][]incidents.Kind{}
	for _, f := range b.facts {
		seq := len(out[f.Incident]) + 1
		if f.Seq != seq || f.FactID != fmt.Sprintf("%s.%d", f.Incident, f.Seq) || f.Time.IsZero() {
			t.Fatalf("fact %+v: want seq %d of %s (ordered, gap-free)", f, seq, f.Incident)
		}
		out[f.Incident] = append(out[f.Incident], f.Kind)
	}
	return out
}

func (b *factBook) all() []incidents.Fact {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.facts)
}

// waitFor waits until cond holds over the facts per incident.
func (b *factBook) waitFor(t testing.TB, what string, cond func(map[string][]incidents.Kind) bool) map[string][]incidents.Kind {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		got := b.byIncident(t)
		if cond(got) {
			return got
		}
		select {
		case <-b.notify:
		case <-deadline:
			t.Fatalf("facts never showed %s; got %v", what, got)
		}
	}
}

// replayIncidentFacts reads the incident facts of process from the facts
// stream as a late subscriber does (an ordered consumer from the start)
// until it has want distinct facts, and returns them in stream order.
func replayIncidentFacts(t testing.TB, env *streamstest.Env, processID string, want int) []incidents.Fact {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := env.JS.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.FactFilter(streams.FactIncident, processID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	book := newFactBook()
	for len(book.all()) < want {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("replay of %s's incident facts: %d of %d: %v", processID, len(book.all()), want, err)
		}
		book.add(m.Subject(), m.Data())
	}
	book.byIncident(t) // identity and order
	return book.all()
}

// Incident facts: a subscriber sees each incident's transitions in
// order, numbered 1, 2, 3... without gaps, each naming the incident, its
// instance, process, node and cause class; a late subscriber replays the
// same from the facts stream.
func TestIncidentFacts(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	book := newFactBook()
	sub, err := env.Conn.Subscribe("jetbpm.fact.incident.>", func(m *nats.Msg) { book.add(m.Subject, m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}

	ops := &engine.Operations{}
	ops.Register("charge", (&flipOp{}).run)
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("facts").StartEvent("s").ServiceTask("charge", "charge").EndEvent("e").Sequence("s", "charge", "e"))
	deployed(t, eng, model.NewBuilder("facts-auto").StartEvent("s").
		ServiceTask("charge", "charge", model.WithIncidentRetry(jobs.FixedDelaySpec(2, 100*time.Millisecond))).
		EndEvent("e").Sequence("s", "charge", "e"))
	ctx := bounded(t)

	a := startJob(t, eng, "facts", map[string]any{"who": "a"})
	b := startJob(t, eng, "facts", map[string]any{"who": "b"})
	c := startJob(t, eng, "facts-auto", nil)
	_, incA := waitIncident(t, eng, a)
	_, incB := waitIncident(t, eng, b)
	_, incC := waitIncident(t, eng, c)
	if err := eng.RetryIncident(ctx, incA.ID); err != nil { // fails again: raised once more
		t.Fatal(err)
	}
	// The retried run is on the operation pool: resolving before it has
	// failed again would resolve the incident it is retrying instead.
	againA := []incidents.Kind{incidents.Raised, incidents.Retried, incidents.Raised}
	book.waitFor(t, fmt.Sprint(incA.ID, " ", againA), func(got map[string][]incidents.Kind) bool { return slices.Equal(got[incA.ID], againA) })
	if err := eng.ResolveIncident(ctx, incA.ID, map[string]any{"receipt": "manual"}); err != nil {
		t.Fatal(err)
	}
	if err := eng.AbandonIncident(ctx, incB.ID); err != nil {
		t.Fatal(err)
	}
	want := map[string][]incidents.Kind{
		incA.ID: {incidents.Raised, incidents.Retried, incidents.Raised, incidents.ResolvedKind},
		incB.ID: {incidents.Raised, incidents.DeadLetterKind},
		// The policy's one automatic retry, then an operator is needed.
		incC.ID: {incidents.Raised, incidents.RetryScheduled, incidents.Retried, incidents.Raised},
	}
	equal := func(got map[string][]incidents.Kind) bool {
		if len(got) != len(want) {
			return false
		}
		for id, kinds := range want {
			if !slices.Equal(got[id], kinds) {
				return false
			}
		}
		return true
	}
	book.waitFor(t, fmt.Sprint(want), equal)
	for _, f := range book.all() {
		inst := map[string]string{incA.ID: a, incB.ID: b, incC.ID: c}[f.Incident]
		process := map[bool]string{true: "facts-auto", false: "facts"}[inst == c]
		if f.Instance != inst || f.ProcessID != process || f.Node != "charge" || f.CauseClass != incidents.CauseOperation {
			t.Errorf("fact %+v: want instance %s, process %s, node charge, cause class operation", f, inst, process)
		}
		if f.Kind == incidents.Raised && !strings.Contains(f.Detail, "gateway down") {
			t.Errorf("raised fact %+v lacks the cause", f)
		}
	}

	// A late subscriber replays them in the same order from the stream.
	late := newFactBook()
	for _, f := range replayIncidentFacts(t, env, "facts", 6) {
		data, _ := json.Marshal(f)
		late.add(streams.FactSubject(streams.FactIncident, f.ProcessID, string(f.Kind)), data)
	}
	for _, f := range replayIncidentFacts(t, env, "facts-auto", 4) {
		data, _ := json.Marshal(f)
		late.add(streams.FactSubject(streams.FactIncident, f.ProcessID, string(f.Kind)), data)
	}
	if got := late.byIncident(t); !equal(got) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
}

// logBook is a slog handler that keeps every record.
type logBook struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

type logHandler struct {
	book  *logBook
	attrs []slog.Attr
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.book.mu.Lock()
	defer h.book.mu.Unlock()
	h.book.records = append(h.book.records, rec)
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{book: h.book, attrs: append(slices.Clone(h.attrs), attrs...)}
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }

func (b *logBook) matching(keep func(logRecord) bool) []logRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []logRecord
	for _, r := range b.records {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Each incident is logged once, at Error, when raised; its later
// transitions are not errors.
func TestIncidentLoggedOnce(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	logs := &logBook{}
	ops := &engine.Operations{}
	ops.Register("charge", (&flipOp{}).run)
	eng := openWith(t, env, engine.Options{Logger: slog.New(&logHandler{book: logs}), Operations: ops})
	deployed(t, eng, model.NewBuilder("logged").StartEvent("s").ServiceTask("charge", "charge").EndEvent("e").Sequence("s", "charge", "e"))
	id := startJob(t, eng, "logged", nil)
	_, inc := waitIncident(t, eng, id)
	// Resolving it is a later step on the same partition: once the
	// instance has completed, everything the raise logs has been logged.
	if err := eng.ResolveIncident(bounded(t), inc.ID, nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed {
		t.Fatalf("%+v", v)
	}
	raised := logs.matching(func(r logRecord) bool { return r.msg == "incident raised" && r.attrs["incident"] == inc.ID })
	if len(raised) != 1 || raised[0].level != slog.LevelError {
		t.Fatalf("incident raised logged %d times (%+v), want once at Error", len(raised), raised)
	}
	if a := raised[0].attrs; a["instance"] != id || a["node"] != "charge" || a["cause_class"] != incidents.CauseOperation ||
		!strings.Contains(a["cause"], "gateway down") {
		t.Errorf("log attributes %v", a)
	}
	errorsAbout := logs.matching(func(r logRecord) bool {
		return r.level >= slog.LevelError && (r.attrs["incident"] == inc.ID || r.attrs["instance"] == id)
	})
	if len(errorsAbout) != 1 {
		t.Errorf("error records about the incident or its instance: %+v, want only the raise", errorsAbout)
	}
}

// --- The zeebe-node conformance files that end in an incident ---

// Worker-RaiseIncident: the worker fails the first job asking for no more
// retries, as zeebe-node's job.fail(..., 0) does: an incident on the task,
// which the operator resolves with the variable that routes to path B.
func TestConformanceWorkerRaiseIncident(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.DeployFile(ctx, corpus+"zeebe-node/Worker-RaiseIncident.bpmn"); err != nil {
		t.Fatal(err)
	}
	wait := newRawWorker(t, env, "wait-raise-incident")
	pathB := newRawWorker(t, env, "pathB-raise-incident")
	id := startJob(t, eng, "raise-incident", map[string]any{"conditionVariable": true})
	m, job := wait.fetch()
	// retries="3" is the default policy: the engine keeps it.
	if job.Policy != nil {
		t.Fatalf("job %+v: want the retries=\"3\" policy (the default) kept, not shipped", job)
	}
	zero := 0
	if v := wait.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "500", Message: "please raise an incident", Retries: &zero}); !v.Accepted {
		t.Fatalf("fail refused: %+v", v)
	}
	iv := checkRaised(t, env, eng, id, "ServiceTask_0cz2k8t", incidents.CauseRetriesExhausted, "please raise an incident")
	wait.expectNone(300 * time.Millisecond)

	if err := eng.ResolveIncident(ctx, iv.ID, map[string]any{"conditionVariable": false}); err != nil {
		t.Fatal(err)
	}
	m, job = pathB.fetch()
	if job.Node != "ServiceTask_15isvh5" || job.Instance != id {
		t.Fatalf("job %+v, want path B of %s", job, id)
	}
	if v := pathB.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"path": "B"}}); !v.Accepted {
		t.Fatalf("complete refused: %+v", v)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["path"] != "B" || v.Variables["conditionVariable"] != false {
		t.Fatalf("%+v, want completed through path B", v)
	}
}

// Worker-Failure-Retries: the worker fails each delivery asking for one
// retry fewer (retries 1, then 0): after 2 attempts the job's retries are
// exhausted and the task holds an incident; an incident retry gets a new
// job that completes.
func TestConformanceWorkerFailureRetries(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.DeployFile(ctx, corpus+"zeebe-node/Worker-Failure-Retries.bpmn"); err != nil {
		t.Fatal(err)
	}
	w := newRawWorker(t, env, "service-task-worker-failure-retries")
	id := startJob(t, eng, "worker-failure-retries", nil)
	var first string
	for delivery := 1; delivery <= 2; delivery++ {
		m, job := w.fetch()
		meta, _ := m.Metadata()
		if int(meta.NumDelivered) != delivery || job.Headers["message"] != "Hello World" || job.Policy == nil || job.Policy.Retry.MaxAttempts != 100 {
			t.Fatalf("delivery %d: %+v (delivered %d)", delivery, job, meta.NumDelivered)
		}
		if first == "" {
			first = job.ID
		}
		if delivery > 1 {
			if v := w.report(m, job, jobs.Report{Kind: jobs.CheckIn}); !v.Accepted {
				t.Fatalf("check-in refused: %+v", v)
			}
		}
		left := 2 - delivery
		if v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "500", Message: "Triggered failure", Retries: &left}); !v.Accepted {
			t.Fatalf("fail %d refused: %+v", delivery, v)
		}
	}
	iv := checkRaised(t, env, eng, id, "ServiceTask_0g6tf5f", incidents.CauseRetriesExhausted, "Triggered failure", "after 2 attempts")
	w.expectNone(300 * time.Millisecond)

	if err := eng.RetryIncident(ctx, iv.ID); err != nil {
		t.Fatal(err)
	}
	m, job := w.fetch()
	if job.ID == first {
		t.Fatalf("the incident retry reused job %s", first)
	}
	if v := w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"said": job.Headers["message"]}}); !v.Accepted {
		t.Fatalf("complete refused: %+v", v)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["said"] != "Hello World" {
		t.Fatalf("%+v", v)
	}
	if _, err := eng.Incident(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown incident: %v", err)
	}
}
