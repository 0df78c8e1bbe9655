package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// The retry design's scenarios (classification, retries with backoff,
// exhaustion, data-flow failures) on JetStream, driven by a raw-protocol
// worker.

// jobProcess deploys start → external task (topic "t", opts) → end, with
// an error boundary "caught" for code ResourceConflict and an exclusive
// gateway on the status variable "lookup" when withStatus.
func jobProcess(t *testing.T, eng *engine.Engine, id string, opts ...model.WorkerOption) {
	t.Helper()
	b := model.NewBuilder(id).StartEvent("s").
		ServiceTask("work", "", model.WithWorker("t", opts...)).
		ExclusiveGateway("check").
		ScriptTask("create", `"created"`, "path").
		EndEvent("e").
		ErrorBoundary("caught", "work", "ResourceConflict").
		ScriptTask("conflict", `"conflict"`, "path").
		EndEvent("e2").
		Sequence("s", "work", "check").
		Flow("check", "create", model.When(`lookup == "NOT_FOUND"`)).
		DefaultFlow("check", "e").
		Sequence("create", "e").
		Sequence("caught", "conflict", "e2")
	if _, err := eng.Deploy(context.Background(), build(t, b)); err != nil {
		t.Fatal(err)
	}
}

func startJob(t *testing.T, eng *engine.Engine, process string, vars map[string]any) string {
	t.Helper()
	id, err := eng.Start(context.Background(), process, vars)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var contrastRules = []jobs.Rule{
	{Code: "404", When: `body.type == "NOT_FOUND"`, Outcome: jobs.BusinessStatus, Value: "NOT_FOUND"},
	{Code: "409", Outcome: jobs.BusinessError, ErrorCode: "ResourceConflict", Message: "conflict"},
}

// A raw fault is classified by the engine before the instance sees it: a
// BPMN error (caught by the boundary) or a status (the task completes and
// a gateway branches on it); neither is retried (NFR-4).
func TestEngineClassifiesFaults(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	jobProcess(t, eng, "classify", model.WithWorkerTrust(jobs.EngineAuthoritative),
		model.WithErrorMapper(contrastRules...), model.WithStatus("lookup", false))
	w := newRawWorker(t, env, "t")
	for _, tc := range []struct {
		code string
		body any
		path string
	}{
		{"409", "busy", "conflict"},
		{"404", map[string]any{"type": "NOT_FOUND"}, "created"},
	} {
		id := startJob(t, eng, "classify", nil)
		m, job := w.fetch()
		if job.Policy != nil {
			t.Fatalf("EngineAuthoritative job shipped its policy: %+v", job.Policy)
		}
		if v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: tc.code, Body: tc.body}); !v.Accepted {
			t.Fatalf("%s: %+v", tc.code, v)
		}
		v := waitDone(t, eng, id)
		if v.Status != instance.Completed || v.Variables["path"] != tc.path {
			t.Fatalf("%s: %+v", tc.code, v)
		}
		w.expectNone(300 * time.Millisecond)
	}
}

// A technical fault is retried with the policy's backoff by redelivery;
// the job keeps its id (the task parked once) and the attempt n+1 never
// comes before the backoff's lower bound. Exhaustion fails the task with
// topic, attempts and last error, and terminates the job.
func TestTechnicalRetriesThenExhausts(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	const backoff = 300 * time.Millisecond
	jobProcess(t, eng, "retry", model.WithWorkerTrust(jobs.EngineAuthoritative),
		model.WithRetryPolicy(jobs.FixedDelaySpec(3, backoff)))
	w := newRawWorker(t, env, "t")
	id := startJob(t, eng, "retry", nil)
	var jobID string
	for attempt := 1; attempt <= 3; attempt++ {
		m, job := w.fetch()
		if jobID == "" {
			jobID = job.ID
		} else if job.ID != jobID {
			t.Fatalf("attempt %d has job %s, want %s: the task was re-entered", attempt, job.ID, jobID)
		}
		meta, _ := m.Metadata()
		if meta.NumDelivered > 1 {
			if v := w.report(m, job, jobs.Report{Kind: jobs.CheckIn}); !v.Accepted {
				t.Fatalf("check-in %d refused: %+v", attempt, v)
			}
		}
		sent := time.Now() // before the engine can nak: the redelivery is at least backoff later
		v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "503", Message: "unavailable"})
		if !v.Accepted {
			t.Fatalf("fail %d refused: %+v", attempt, v)
		}
		if attempt < 3 {
			next, _ := w.fetch()
			if gap := time.Since(sent); gap < backoff {
				t.Fatalf("attempt %d came %s after the fault, before the %s backoff", attempt+1, gap, backoff)
			}
			w.putBack(next)
		}
	}
	_, inc := waitIncident(t, eng, id)
	if inc.Node != "work" || inc.CauseClass != "retriesExhausted" {
		t.Fatalf("%+v", inc)
	}
	for _, want := range []string{`topic "t"`, "after 3 attempts", "503", "unavailable"} {
		if !strings.Contains(inc.Cause, want) {
			t.Errorf("diagnostic %q lacks %q", inc.Cause, want)
		}
	}
	w.expectNone(300 * time.Millisecond)
}

// A poison job kills every worker that takes it: nobody reports, yet the
// job reaches exhaustion when the next worker checks in.
func TestPoisonJobExhaustsWithoutReports(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	jobProcess(t, eng, "poison", model.WithLockDuration(time.Second), model.WithRetryPolicy(jobs.FixedDelaySpec(2, 0)))
	w := newRawWorker(t, env, "t")
	id := startJob(t, eng, "poison", nil)
	w.fetch() // delivery 1: the worker dies
	m, job := w.fetch()
	if v := w.report(m, job, jobs.Report{Kind: jobs.CheckIn}); !v.Accepted {
		t.Fatalf("check-in of delivery 2 refused: %+v", v) // attempt 2 of 2 may run
	}
	m, job = w.fetch() // delivery 2's worker died too
	v := w.report(m, job, jobs.Report{Kind: jobs.CheckIn})
	if v.Accepted || !strings.Contains(v.Reason, "retries exhausted after 2 attempts") {
		t.Fatalf("check-in of delivery 3: %+v, want refused as exhausted", v)
	}
	if _, inc := waitIncident(t, eng, id); !strings.Contains(inc.Cause, "lock expired") {
		t.Fatalf("%+v", inc)
	}
	w.expectNone(1500 * time.Millisecond)
}

// A failure applying a worker's outcome is a data-flow failure, and the
// job does not run again: a required output path missing, a status
// variable that exists and may not be overwritten.
func TestDataFlowFailuresDoNotRetry(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	jobProcess(t, eng, "mapped", model.WithWorkerTrust(jobs.EngineAuthoritative),
		model.WithOutputMapping(jobs.OutputRule{Path: "body.data.id", Variable: "orderId", Required: true}))
	jobProcess(t, eng, "status", model.WithWorkerTrust(jobs.EngineAuthoritative),
		model.WithErrorMapper(contrastRules...), model.WithStatus("lookup", false))
	w := newRawWorker(t, env, "t")

	id := startJob(t, eng, "mapped", nil)
	m, job := w.fetch()
	w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"data": map[string]any{}}})
	if _, inc := waitIncident(t, eng, id); inc.CauseClass != "dataFlow" || !strings.Contains(inc.Cause, "orderId") {
		t.Fatalf("missing output: %+v", inc)
	}
	w.expectNone(300 * time.Millisecond)

	id = startJob(t, eng, "status", map[string]any{"lookup": "earlier"})
	m, job = w.fetch()
	w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "404", Body: map[string]any{"type": "NOT_FOUND"}})
	if _, inc := waitIncident(t, eng, id); inc.CauseClass != "dataFlow" || !strings.Contains(inc.Cause, "already exists") {
		t.Fatalf("status collision: %+v", inc)
	}
	w.expectNone(300 * time.Millisecond)
}

// The per-service policy overrides the engine-wide default, which
// overrides the batteries' default; under WorkerTrusted the job carries
// the resolved policy when it differs from its topic's default, and the
// engine keeps and runs a default one.
func TestTwoLevelPolicy(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ctx := context.Background()
	eng, err := engine.Open(ctx, env.Conn, engine.Options{Logger: quietLog, Jobs: jobs.Overrides{
		Retry: ptr(jobs.FixedDelaySpec(7, time.Second)), MaxLockDuration: 10 * time.Minute,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(ctx) })
	jobProcess(t, eng, "engine-default")
	jobProcess(t, eng, "per-service", model.WithRetryPolicy(jobs.NoRetrySpec()), model.WithMaxLockDuration(time.Hour))
	w := newRawWorker(t, env, "t")
	for _, tc := range []struct {
		process  string
		attempts int
		maxLock  time.Duration
	}{{"engine-default", 7, 10 * time.Minute}, {"per-service", 1, time.Hour}} {
		startJob(t, eng, tc.process, nil)
		m, job := w.fetch()
		if tc.process == "engine-default" {
			// The engine-wide level is the topic's default: not shipped; a
			// fault is retried by the engine with its 7 attempts, 1 s apart.
			if job.Policy != nil || job.LockDurationMs != jobs.DefaultLockDuration.Milliseconds() {
				t.Fatalf("%s: job %+v shipped its topic's default policy", tc.process, job)
			}
			v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "503"})
			if !v.Accepted || !strings.Contains(v.Reason, "attempt 1 of 7 failed, retrying in 1s") {
				t.Fatalf("%s: fail verdict %+v", tc.process, v)
			}
			m, job = w.fetch()
			if meta, _ := m.Metadata(); meta == nil || meta.NumDelivered != 2 {
				t.Fatalf("%s: want the job's second delivery, got %+v", tc.process, meta)
			}
			w.report(m, job, jobs.Report{Kind: jobs.Complete})
			continue
		}
		if job.Policy == nil || job.Policy.Retry.MaxAttempts != tc.attempts || job.Policy.MaxLockDuration != tc.maxLock ||
			job.Policy.LockDuration != jobs.DefaultLockDuration {
			t.Fatalf("%s: shipped policy %+v", tc.process, job.Policy)
		}
		w.report(m, job, jobs.Report{Kind: jobs.Complete})
	}
}

func ptr[T any](v T) *T { return &v }

// putBack hands a fetched delivery to the next fetch of the same test: the
// raw worker keeps it and returns it first.
func (w *rawWorker) putBack(m jetstream.Msg) { w.held = append(w.held, m) }

// expectNone fails if a job is delivered within d.
func (w *rawWorker) expectNone(d time.Duration) {
	w.t.Helper()
	batch, err := w.cons.Fetch(1, jetstream.FetchMaxWait(d))
	if err != nil {
		w.t.Fatal(err)
	}
	for m := range batch.Messages() {
		w.t.Fatalf("unexpected delivery: %s", m.Data())
	}
}
