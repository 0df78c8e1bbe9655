package workerkit_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
	"github.com/jetbpm/jetbpm/workerkit"
)

// quietLog keeps the engine's test output to warnings and errors.
var quietLog = enginetest.QuietLog

// waitLimit bounds every wait of these tests.
const waitLimit = 30 * time.Second

type fixture struct {
	t   *testing.T
	env *streamstest.Env
	eng *engine.Engine
}

func setup(t *testing.T) *fixture {
	t.Helper()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, engine.Options{})
	return &fixture{t: t, env: env, eng: eng}
}

// deploy deploys start → task "work" (topic, opts) → gateway "check" →
// end, with an error boundary on REJECTED setting path=rejected and the
// gateway setting path=created when lookup is NOT_FOUND.
func (f *fixture) deploy(id, topic string, opts ...model.WorkerOption) {
	f.t.Helper()
	b := model.NewBuilder(id).StartEvent("s").
		ServiceTask("work", "", model.WithWorker(topic, opts...)).
		ExclusiveGateway("check").
		ScriptTask("create", `"created"`, "path").
		EndEvent("e").
		ErrorBoundary("caught", "work", "REJECTED").
		ScriptTask("rejected", `"rejected"`, "path").
		EndEvent("e2").
		Sequence("s", "work", "check").
		Flow("check", "create", model.When(`lookup == "NOT_FOUND"`)).
		DefaultFlow("check", "e").
		Sequence("create", "e").
		Sequence("caught", "rejected", "e2")
	p, err := b.Build()
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.eng.Deploy(context.Background(), p); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) start(process string, vars map[string]any) string {
	f.t.Helper()
	id, err := f.eng.Start(context.Background(), process, vars)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// waitIncident waits until the instance has an open incident (a failure
// the model did not handle no longer fails it) and returns the
// view and that incident. It fails at once if the instance ends instead.
func (f *fixture) waitIncident(id string) (*engine.InstanceView, engine.IncidentSummary) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	v, err := f.eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool {
		return v.Status == engine.StatusIncident || v.Status.Finished()
	})
	if err != nil || v.Status != engine.StatusIncident || len(v.Incidents) != 1 {
		f.t.Fatalf("instance %s: want one open incident, got %+v (%v)", id, v, err)
	}
	if v.Failure != nil || !slices.Equal(v.ActiveNodes, []string{"work"}) || v.Incidents[0].Node != "work" {
		f.t.Fatalf("instance %s = %+v: want it alive, its token on work holding the incident", id, v)
	}
	return v, v.Incidents[0]
}

func (f *fixture) wait(id string) *engine.InstanceView {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	v, err := f.eng.Wait(ctx, id)
	if err != nil {
		f.t.Fatalf("instance %s did not finish: %v", id, err)
	}
	return v
}

// worker runs a worker whose handlers register registers, until the
// returned stop is called or the test ends.
type runningWorker struct {
	cancel  context.CancelFunc
	done    chan error
	stopped bool // the test called stop and checked Run's error
}

func (f *fixture) worker(register func(w *workerkit.Worker), opts workerkit.Options) *runningWorker {
	f.t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(f.t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	w, err := workerkit.New(f.env.NewConn(f.t), opts)
	if err != nil {
		f.t.Fatal(err)
	}
	register(w)
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningWorker{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	f.t.Cleanup(func() {
		if r.stopped {
			return
		}
		if err := r.stop(); err != nil {
			f.t.Errorf("worker: %v", err)
		}
	})
	return r
}

// stop cancels Run and returns its error; it fails if Run does not return.
func (r *runningWorker) stop() error {
	r.stopped = true
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // a second stop sees the same
		return err
	case <-time.After(waitLimit):
		return errors.New("Run did not return")
	}
}

// calls records handler invocations.
type calls struct {
	mu   sync.Mutex
	jobs []workerkit.Job
}

func (c *calls) add(j *workerkit.Job) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	copied := *j
	copied.Input = maps.Clone(j.Input)
	c.jobs = append(c.jobs, copied)
	return len(c.jobs)
}

func (c *calls) all() []workerkit.Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.jobs)
}

func TestCompleteWithOutput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var c calls
	// The worker starts before the topic's consumer exists and waits for it.
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			return map[string]any{"receipt": "r-" + job.Input["order"].(string)}, nil
		})
	}, workerkit.Options{Name: "billing-1"})
	f.deploy("pay", "payments", model.WithHeaders(map[string]string{"region": "eu"}))
	id := f.start("pay", map[string]any{"order": "42", "amount": 10})

	v := f.wait(id)
	if v.Status != instance.Completed || v.Variables["receipt"] != "r-42" {
		t.Fatalf("instance = %+v, want completed with receipt r-42", v)
	}
	got := c.all()
	if len(got) != 1 {
		t.Fatalf("handler called %d times, want 1", len(got))
	}
	j := got[0]
	if j.Instance != id || j.Topic != "payments" || j.Node != "work" || j.ProcessID != "pay" || j.Input["amount"] != 10.0 ||
		j.Headers["region"] != "eu" || j.EnqueuedAt.IsZero() || time.Since(j.EnqueuedAt) > waitLimit || j.DeliveredAt.IsZero() || time.Since(j.DeliveredAt) > waitLimit || j.Delivery != 1 || j.Attempt != 1 || j.LockDuration != jobs.DefaultLockDuration || j.ID == "" {
		t.Errorf("job = %+v", j)
	}
}

func TestBpmnErrorCaughtByBoundary(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments")
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			return nil, workerkit.BpmnError("REJECTED", "card declined", map[string]any{"reason": "declined"})
		})
	}, workerkit.Options{})
	v := f.wait(f.start("pay", nil))
	if v.Status != instance.Completed || v.Variables["path"] != "rejected" || v.Variables["reason"] != "declined" {
		t.Fatalf("instance = %+v, want completed through the boundary with reason declined", v)
	}
}

func TestStatusBranches(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("lookup", "lookup", model.WithStatus("lookup", false))
	f.worker(func(w *workerkit.Worker) {
		w.Handle("lookup", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			return nil, fmtWrap(workerkit.Status("NOT_FOUND"))
		})
	}, workerkit.Options{})
	v := f.wait(f.start("lookup", nil))
	if v.Status != instance.Completed || v.Variables["lookup"] != "NOT_FOUND" || v.Variables["path"] != "created" {
		t.Fatalf("instance = %+v, want completed with lookup NOT_FOUND via create", v)
	}
}

// fmtWrap wraps err as a handler might; outcomes are found with errors.As.
func fmtWrap(err error) error { return errors.Join(errors.New("lookup"), err) }

func TestEngineAuthoritativeRetriesAcrossDeliveries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments", model.WithWorkerTrust(jobs.EngineAuthoritative),
		model.WithRetryPolicy(jobs.FixedDelaySpec(3, 50*time.Millisecond)))
	var c calls
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			return nil, errors.New("bank unreachable")
		})
	}, workerkit.Options{})
	_, inc := f.waitIncident(f.start("pay", nil))
	if inc.CauseClass != "retriesExhausted" || inc.Attempts != 1 || !strings.Contains(inc.Cause, "retries exhausted after 3 attempts") ||
		!strings.Contains(inc.Cause, "bank unreachable") {
		t.Fatalf("incident = %+v, want retriesExhausted after 3 attempts", inc)
	}
	got := c.all()
	if len(got) != 3 {
		t.Fatalf("handler called %d times, want 3", len(got))
	}
	for i, j := range got {
		if j.Delivery != i+1 || j.Attempt != i+1 {
			t.Errorf("call %d: delivery %d attempt %d, want %d and %d", i+1, j.Delivery, j.Attempt, i+1, i+1)
		}
	}
}

func TestWorkerTrustedRetriesWithinOneDelivery(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments", model.WithRetryPolicy(jobs.FixedDelaySpec(3, 50*time.Millisecond)))
	var c calls
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			job.Input["mutated"] = true // the next attempt must not see it
			return nil, workerkit.Fault("503", map[string]any{"error": "unavailable"})
		})
	}, workerkit.Options{})
	_, inc := f.waitIncident(f.start("pay", nil))
	if inc.CauseClass != "retriesExhausted" || !strings.Contains(inc.Cause, "retries exhausted") ||
		!strings.Contains(inc.Cause, "code 503") {
		t.Fatalf("incident = %+v, want retriesExhausted naming code 503", inc)
	}
	got := c.all()
	if len(got) != 3 {
		t.Fatalf("handler called %d times, want 3", len(got))
	}
	for i, j := range got {
		if j.Delivery != 1 || j.Attempt != i+1 || j.Input["mutated"] != nil {
			t.Errorf("call %d: delivery %d attempt %d input %v, want delivery 1, attempt %d, fresh input", i+1, j.Delivery, j.Attempt, j.Input, i+1)
		}
	}
}

func TestWorkerTrustedErrorMapper(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("lookup", "lookup", model.WithStatus("lookup", false), model.WithErrorMapper(
		jobs.Rule{Code: "404", When: `body.type == "NOT_FOUND"`, Outcome: jobs.BusinessStatus, Value: "NOT_FOUND"},
		jobs.Rule{Code: "409", Outcome: jobs.BusinessError, ErrorCode: "REJECTED", Message: "conflict"},
	))
	var c calls
	f.worker(func(w *workerkit.Worker) {
		w.Handle("lookup", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			return nil, workerkit.Fault(job.Input["code"].(string), map[string]any{"type": "NOT_FOUND"})
		})
	}, workerkit.Options{})
	v := f.wait(f.start("lookup", map[string]any{"code": "404"}))
	if v.Status != instance.Completed || v.Variables["lookup"] != "NOT_FOUND" || v.Variables["path"] != "created" {
		t.Fatalf("404: instance = %+v, want completed with lookup NOT_FOUND via create", v)
	}
	v = f.wait(f.start("lookup", map[string]any{"code": "409"}))
	if v.Status != instance.Completed || v.Variables["path"] != "rejected" {
		t.Fatalf("409: instance = %+v, want completed through the boundary", v)
	}
	if n := len(c.all()); n != 2 {
		t.Errorf("handler called %d times, want 2 (business outcomes are not retried)", n)
	}
}

func TestLockExtendedForSlowHandler(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("slow", "slow", model.WithLockDuration(time.Second))
	var c calls
	f.worker(func(w *workerkit.Worker) {
		w.Handle("slow", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			select { // 2.5 locks of work
			case <-time.After(2500 * time.Millisecond):
				return map[string]any{"done": true}, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})
	}, workerkit.Options{})
	v := f.wait(f.start("slow", nil))
	if v.Status != instance.Completed || v.Variables["done"] != true {
		t.Fatalf("instance = %+v, want completed", v)
	}
	if n := len(c.all()); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
}

func TestMaxLockCancelsHandler(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("capped", "capped", model.WithLockDuration(time.Second), model.WithMaxLockDuration(2*time.Second))
	var c calls
	causes := make(chan error, 1)
	f.worker(func(w *workerkit.Worker) {
		w.Handle("capped", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			if job.Delivery == 1 {
				<-ctx.Done() // hangs until the worker gives up the lock
				causes <- context.Cause(ctx)
				return map[string]any{"first": true}, nil // too late: not reported
			}
			return map[string]any{"second": true}, nil
		})
	}, workerkit.Options{})
	v := f.wait(f.start("capped", nil))
	if v.Status != instance.Completed || v.Variables["second"] != true || v.Variables["first"] != nil {
		t.Fatalf("instance = %+v, want completed by the second delivery only", v)
	}
	if cause := <-causes; !errors.Is(cause, workerkit.ErrLockLost) || !strings.Contains(cause.Error(), "maxLockDuration") {
		t.Errorf("first handler's ctx cause = %v, want ErrLockLost for maxLockDuration", cause)
	}
	got := c.all()
	if len(got) != 2 || got[1].Delivery != 2 {
		t.Fatalf("calls = %+v, want 2, the second on delivery 2", got)
	}
}

func TestShutdownDrainsJobInFlight(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments")
	started, release := make(chan struct{}), make(chan struct{})
	var finished bool // written by the handler before it returns
	var ctxErr error
	r := f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			close(started)
			<-release
			finished, ctxErr = true, ctx.Err()
			return map[string]any{"drained": true}, nil
		})
	}, workerkit.Options{})
	id := f.start("pay", nil)
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("handler not called")
	}
	r.cancel()
	// Give a wrong Run time to return early before the handler may finish.
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			t.Fatalf("Run = %v, want nil after a clean drain", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
	}
	if !finished || ctxErr != nil { // Run's return orders these reads after the writes
		t.Fatalf("Run returned with finished=%v, handler ctx err %v; want finished with a live ctx", finished, ctxErr)
	}
	if v := f.wait(id); v.Status != instance.Completed || v.Variables["drained"] != true {
		t.Fatalf("instance = %+v, want completed by the drained job", v)
	}
}

func TestShutdownTimeoutCancelsJob(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments")
	started := make(chan struct{})
	r := f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}, workerkit.Options{ShutdownTimeout: 200 * time.Millisecond})
	f.start("pay", nil)
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("handler not called")
	}
	if err := r.stop(); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("Run = %v, want an error saying the jobs in flight were cancelled", err)
	}
}

func TestRunReturnsPromptly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments") // one topic with a consumer, one without
	r := f.worker(func(w *workerkit.Worker) {
		noop := func(ctx context.Context, job *workerkit.Job) (map[string]any, error) { return nil, nil }
		w.Handle("payments", noop, workerkit.Concurrency(4))
		w.Handle("not-deployed", noop)
	}, workerkit.Options{})
	start := time.Now()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Run took %s to return, want under 3s", took)
	}
}

func TestConcurrency(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments")
	const n = 4
	arrived := make(chan struct{}, n)
	all := make(chan struct{})
	var once sync.Once
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			arrived <- struct{}{}
			if len(arrived) == n {
				once.Do(func() { close(all) })
			}
			select { // every job waits until all n run at once
			case <-all:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, workerkit.Concurrency(n))
	}, workerkit.Options{})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = f.start("pay", nil)
	}
	for _, id := range ids {
		if v := f.wait(id); v.Status != instance.Completed {
			t.Fatalf("instance %s = %+v, want completed", id, v)
		}
	}
}

func TestPanicIsTechnicalFault(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments", model.WithRetryPolicy(jobs.NoRetrySpec()))
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			var m map[string]any
			//lint:ignore SA5000 the nil-map panic is what the test raises
			m["boom"] = 1
			return m, nil
		})
	}, workerkit.Options{})
	_, inc := f.waitIncident(f.start("pay", nil))
	if inc.CauseClass != "retriesExhausted" || !strings.Contains(inc.Cause, "handler panicked") {
		t.Fatalf("incident = %+v, want retriesExhausted by the panic", inc)
	}
}

func TestOutputMappingFailureFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments", model.WithOutputMapping(jobs.OutputRule{Path: "body.receipt.id", Variable: "receipt", Required: true}))
	var c calls
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			return map[string]any{"other": 1}, nil
		})
	}, workerkit.Options{})
	_, inc := f.waitIncident(f.start("pay", nil))
	if inc.CauseClass != "dataFlow" || !strings.Contains(inc.Cause, "receipt") {
		t.Fatalf("incident = %+v, want dataFlow naming the output mapping's receipt", inc)
	}
	if n := len(c.all()); n != 1 {
		t.Errorf("handler called %d times, want 1 (a data-flow failure is not retried)", n)
	}
}

func TestOutputMappingAppliedByWorker(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments", model.WithOutputMapping(jobs.OutputRule{Path: "body.receipt.id", Variable: "receipt", Required: true}))
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			return map[string]any{"receipt": map[string]any{"id": "r-7"}, "noise": true}, nil
		})
	}, workerkit.Options{})
	v := f.wait(f.start("pay", nil))
	if v.Status != instance.Completed || v.Variables["receipt"] != "r-7" || v.Variables["noise"] != nil {
		t.Fatalf("instance = %+v, want completed with receipt r-7 only", v)
	}
}

func TestHandleMisuse(t *testing.T) {
	t.Parallel()
	w, err := workerkit.New(setup(t).env.NewConn(t), workerkit.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(ctx context.Context, job *workerkit.Job) (map[string]any, error) { return nil, nil }
	if err := w.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no handlers") {
		t.Errorf("Run without handlers = %v", err)
	}
	for name, fn := range map[string]func(){
		"empty topic": func() { w.Handle("", noop) },
		"nil handler": func() { w.Handle("t", nil) },
		"after Run":   func() { w.Handle("t", noop) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Handle did not panic", name)
				}
			}()
			fn()
		}()
	}
	if _, err := workerkit.New(nil, workerkit.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// A redelivered job's earlier deliveries count against its retry budget:
// after a worker died holding delivery 1, delivery 2 runs attempts 2 and 3
// of 3, not three more.
func TestWorkerTrustedRedeliveryKeepsTheBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy("pay", "payments", model.WithRetryPolicy(jobs.FixedDelaySpec(3, 50*time.Millisecond)), model.WithLockDuration(time.Second))
	started := make(chan struct{}, 1)
	dying := f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			started <- struct{}{}
			<-ctx.Done() // never finishes: the worker stops without reporting
			return nil, ctx.Err()
		})
	}, workerkit.Options{Logger: quietLog, ShutdownTimeout: 10 * time.Millisecond})
	id := f.start("pay", nil)
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("the first worker got no job")
	}
	_ = dying.stop() // it gave up on a running handler: an error is expected
	var c calls
	f.worker(func(w *workerkit.Worker) {
		w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			c.add(job)
			return nil, workerkit.Fault("503", nil)
		})
	}, workerkit.Options{Logger: quietLog})
	_, inc := f.waitIncident(id)
	if inc.CauseClass != "retriesExhausted" || !strings.Contains(inc.Cause, "after 3 attempts") {
		t.Fatalf("incident = %+v, want retries exhausted after 3 attempts", inc)
	}
	got := c.all()
	if len(got) != 2 {
		t.Fatalf("the second worker ran the job %d times, want 2 (attempts 2 and 3 of 3)", len(got))
	}
	for i, j := range got {
		if j.Delivery != 2 || j.Attempt != i+2 {
			t.Errorf("call %d: delivery %d attempt %d, want delivery 2, attempt %d", i+1, j.Delivery, j.Attempt, i+2)
		}
	}
}

// FailWith decides what comes next itself: the retries it names (after
// its backoff), then with 0 an incident at once, whatever the task's
// policy would have done — under a kept default and a shipped policy.
func TestFailWithSetsTheRetries(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts []model.WorkerOption
	}{
		{"default policy", nil},
		{"shipped policy", []model.WorkerOption{model.WithRetryPolicy(jobs.FixedDelaySpec(9, time.Millisecond))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t)
			f.deploy("pay", "payments", c.opts...)
			var calls calls
			f.worker(func(w *workerkit.Worker) {
				w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
					calls.add(job)
					if len(calls.all()) == 1 {
						return nil, workerkit.FailWith(errors.New("busy"), 1, 10*time.Millisecond)
					}
					return nil, workerkit.FailWith(workerkit.Fault("403", "host not allowed"), 0, 0)
				})
			}, workerkit.Options{})
			_, inc := f.waitIncident(f.start("pay", nil))
			if inc.CauseClass != "retriesExhausted" || !strings.Contains(inc.Cause, "host not allowed") {
				t.Fatalf("incident = %+v, want retriesExhausted naming the last failure", inc)
			}
			if n := len(calls.all()); n != 2 {
				t.Fatalf("handler called %d times, want 2", n)
			}
		})
	}
}
