package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// fault makes the conformance workers of a topic misbehave before or
// instead of completing.
type fault struct {
	// bpmnError, if set, is thrown (a WorkerTrusted verdict) instead of
	// completing.
	bpmnError string
	// technical is the number of deliveries reported as technical failures
	// before the job completes. The worker asks for the retries the shipped
	// policy leaves (maxAttempts - attempt), as a Zeebe client's fail
	// command passes job.retries - 1; the redelivery is checked in first.
	technical int
}

// servedJob is one job the conformance workers finished.
type servedJob struct {
	Topic, Node string
	Input       map[string]any
	Headers     map[string]string
	Policy      *jobs.Policy
	// Deliveries is the number of deliveries the job took.
	Deliveries int
	// Outcome is the report that finished it: complete or bpmnError.
	Outcome jobs.ReportKind
}

// jobWorkers serve the external tasks of one instance over the raw worker
// protocol (fetch, check-in on redeliveries, report), one goroutine per
// topic, until stopped.
type jobWorkers struct {
	t        testing.TB
	instance string
	outputs  map[string]map[string]any
	faults   map[string]fault
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu     sync.Mutex
	served []servedJob
	fails  map[string]int // job id → technical failures reported
}

// processTopics returns the topics of p's external tasks, sorted.
func processTopics(p *model.Process) []string {
	var topics []string
	for _, n := range p.Nodes {
		if n.IsExternal() && !slices.Contains(topics, n.Service.Worker.Topic) {
			topics = append(topics, n.Service.Worker.Topic)
		}
	}
	sort.Strings(topics)
	return topics
}

// serveJobs starts workers on topics for the jobs of instance id: each job
// completes with outputs[topic] (an empty output when the topic has none),
// unless faults[topic] says otherwise. Jobs of other instances are left
// alone. The workers run until stop, bounded by limit.
func serveJobs(t testing.TB, env *streamstest.Env, id string, topics []string,
	outputs map[string]map[string]any, faults map[string]fault, limit time.Duration) *jobWorkers {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	jw := &jobWorkers{t: t, instance: id, outputs: outputs, faults: faults, cancel: cancel, fails: map[string]int{}}
	for _, topic := range topics {
		w := newRawWorker(t, env, topic)
		jw.wg.Add(1)
		go func() {
			defer jw.wg.Done()
			jw.loop(ctx, w, topic)
		}()
	}
	t.Cleanup(func() { jw.stop() })
	return jw
}

// stop ends the workers and returns the jobs they finished, ordered by
// node. It may be called more than once.
func (jw *jobWorkers) stop() []servedJob {
	jw.cancel()
	jw.wg.Wait()
	jw.mu.Lock()
	defer jw.mu.Unlock()
	out := slices.Clone(jw.served)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

func (jw *jobWorkers) loop(ctx context.Context, w *rawWorker, topic string) {
	for ctx.Err() == nil {
		batch, err := w.cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, nats.ErrConnectionClosed) {
				jw.t.Errorf("topic %s: fetch: %v", topic, err)
			}
			return
		}
		for m := range batch.Messages() {
			if err := jw.handle(w, topic, m); err != nil {
				jw.t.Errorf("topic %s: %v", topic, err)
			}
		}
	}
}

// handle works one delivery. Its reports finish even when the workers are
// stopped meanwhile: the instance may end before the verdict arrives.
func (jw *jobWorkers) handle(w *rawWorker, topic string, m jetstream.Msg) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var job jobs.Job
	if err := json.Unmarshal(m.Data(), &job); err != nil {
		return fmt.Errorf("job body: %w", err)
	}
	if job.Instance != jw.instance {
		return nil // another instance's job (a failed earlier run): not ours to touch
	}
	meta, err := m.Metadata()
	if err != nil {
		return err
	}
	if meta.NumDelivered > 1 {
		v, err := reportJob(ctx, w.nc, m, job, jobs.Report{Kind: jobs.CheckIn})
		if err != nil || !v.Accepted {
			return fmt.Errorf("check-in of %s delivery %d: %+v %v", job.ID, meta.NumDelivered, v, err)
		}
	}
	f := jw.faults[topic]
	jw.mu.Lock()
	failed := jw.fails[job.ID]
	if failed < f.technical {
		jw.fails[job.ID]++
	}
	jw.mu.Unlock()
	var r jobs.Report
	switch {
	case failed < f.technical:
		r = jobs.Report{Kind: jobs.Fail, Code: "503", Message: "conformance worker: planned technical failure"}
		if job.Policy != nil {
			left := job.Policy.Retry.MaxAttempts - int(meta.NumDelivered)
			if left < 1 {
				return fmt.Errorf("job %s: policy %+v leaves no retry after delivery %d", job.ID, job.Policy.Retry, meta.NumDelivered)
			}
			r.Retries = &left
		}
	case f.bpmnError != "":
		r = jobs.Report{Kind: jobs.BpmnError, ErrorCode: f.bpmnError, Message: "conformance worker: planned BPMN error"}
	default:
		r = jobs.Report{Kind: jobs.Complete, Output: jw.outputs[topic]}
	}
	r.Worker = "conformance"
	v, err := reportJob(ctx, w.nc, m, job, r)
	if err != nil {
		return fmt.Errorf("%s of %s: %w", r.Kind, job.ID, err)
	}
	if !v.Accepted {
		return fmt.Errorf("%s of %s refused: %s", r.Kind, job.ID, v.Reason)
	}
	if r.Kind != jobs.Fail {
		jw.mu.Lock()
		jw.served = append(jw.served, servedJob{Topic: topic, Node: job.Node, Input: job.Input, Headers: job.Headers,
			Policy: job.Policy, Deliveries: int(meta.NumDelivered), Outcome: r.Kind})
		jw.mu.Unlock()
	}
	return nil
}

// reportJob sends r for delivery m and waits for the engine's verdict, as
// rawWorker.report does, but returns errors instead of failing the test, so
// that it can run off the test goroutine.
func reportJob(ctx context.Context, nc *nats.Conn, m jetstream.Msg, job jobs.Job, r jobs.Report) (jobs.Verdict, error) {
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return jobs.Verdict{}, err
	}
	defer sub.Unsubscribe()
	r.JobID, r.Delivery, r.ReplyTo = job.ID, m.Reply(), inbox
	body, err := json.Marshal(r)
	if err != nil {
		return jobs.Verdict{}, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return jobs.Verdict{}, err
	}
	if _, err := js.Publish(ctx, job.ReportTo, body); err != nil {
		return jobs.Verdict{}, err
	}
	reply, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		return jobs.Verdict{}, fmt.Errorf("no verdict: %w", err)
	}
	var v jobs.Verdict
	if err := json.Unmarshal(reply.Data, &v); err != nil {
		return jobs.Verdict{}, err
	}
	return v, nil
}
