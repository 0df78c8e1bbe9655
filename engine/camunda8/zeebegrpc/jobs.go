package zeebegrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/lease"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// A Zeebe worker activates jobs and reports them by key. The gateway
// lends it JetStream deliveries (engine/lease): a job's key is its
// delivery (camunda8.JobKey), so a report after the lock moved on is
// refused NOT_FOUND, as the engine fences NATS reports
// (docs/camunda8-migration.md §2, §4).

// maxActivate bounds one ActivateJobs call's jobs.
const maxActivate = 1000

// ActivateJobs lends up to maxJobsToActivate jobs of a type, waiting for
// the first up to requestTimeout (0: Options.LongPoll; negative: not at
// all). Each job is locked until the activation's timeout: the gateway
// extends the delivery's lock while it lasts (within the task's
// maxLockDuration).
func (g *Gateway) ActivateJobs(req *pb.ActivateJobsRequest, srv pb.Gateway_ActivateJobsServer) error {
	switch {
	case strings.TrimSpace(req.GetType()) == "":
		return status.Error(codes.InvalidArgument, "expected to activate jobs with a non-empty type, but type is blank")
	case req.GetMaxJobsToActivate() < 1:
		return status.Errorf(codes.InvalidArgument, "expected to activate at least 1 job, but maxJobsToActivate is %d", req.GetMaxJobsToActivate())
	case req.GetTimeout() < 1:
		return status.Errorf(codes.InvalidArgument, "expected a job timeout of at least 1 ms, but it is %d", req.GetTimeout())
	}
	ctx := srv.Context()
	if err := mayWork(ctx, req.GetType()); err != nil {
		return err
	}
	wait := g.opts.LongPoll
	switch t := req.GetRequestTimeout(); {
	case t < 0:
		wait = 0
	case t > 0:
		wait = time.Duration(t) * time.Millisecond
	}
	got := g.lender.Fetch(ctx, lease.Request{Worker: req.GetWorker(), Max: min(int(req.GetMaxJobsToActivate()), maxActivate),
		Wait: wait, Topics: []lease.Topic{{Name: req.GetType()}}})
	if len(got) == 0 {
		return nil
	}
	timeout := time.Duration(req.GetTimeout()) * time.Millisecond
	resp := &pb.ActivateJobsResponse{}
	for i := range got {
		job, err := g.activated(ctx, &got[i], req, timeout)
		if err != nil {
			g.opts.Logger.Warn("job not handed out", "job", got[i].Job.ID, "err", err)
			go g.lender.Release(got[i].Job, got[i].Subject)
			continue
		}
		resp.Jobs = append(resp.Jobs, job)
	}
	if err := srv.Send(resp); err != nil {
		for _, j := range resp.Jobs {
			g.release(camunda8.Key(j.Key))
		}
		return err
	}
	return nil
}

// activated renders a lease as Zeebe's job and remembers it as held.
func (g *Gateway) activated(ctx context.Context, s *lease.Lease, req *pb.ActivateJobsRequest, timeout time.Duration) (*pb.ActivatedJob, error) {
	job, view := s.Job, s.View
	key, err := camunda8.JobKey(g.eng.PartitionOf(job.Instance)+1, s.Delivery.Seq, s.Delivery.Count)
	if err != nil {
		return nil, err
	}
	ik, err := g.ids.InstanceKey(ctx, job.Instance)
	if err != nil {
		return nil, err
	}
	dk, err := g.ids.DefinitionKey(ctx, view.ProcessID, view.Version)
	if err != nil {
		return nil, err
	}
	vars := job.Input
	if names := req.GetFetchVariable(); len(names) > 0 {
		vars = map[string]any{}
		for _, n := range names {
			if v, ok := job.Input[n]; ok {
				vars[n] = v
			}
		}
	}
	doc, err := json.Marshal(orEmpty(vars))
	if err != nil {
		return nil, err
	}
	headers, err := json.Marshal(orEmpty(job.Headers))
	if err != nil {
		return nil, err
	}
	deadline := g.hold(key, s, g.opts.Now().Add(timeout))
	return &pb.ActivatedJob{
		Key: int64(key), Type: job.Topic, ProcessInstanceKey: int64(ik), BpmnProcessId: view.ProcessID,
		ProcessDefinitionVersion: int32(view.Version), ProcessDefinitionKey: int64(dk), ElementId: job.Node,
		// Element instances have no keys yet: the instance's, which
		// SetVariables accepts, stands in.
		ElementInstanceKey: int64(ik), CustomHeaders: string(headers), Worker: req.GetWorker(),
		Retries: int32(min(s.Retries, 1<<31-1)), Deadline: deadline.UnixMilli(), Variables: string(doc),
	}, nil
}

func orEmpty[M ~map[string]V, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// A held job is a delivery this node lent: its subject (so a report sends
// the exact one) and the goroutine extending its lock to the activation's
// timeout.
type held struct {
	job     *jobs.Job
	subject string
	stop    chan struct{}
}

// hold remembers a lent delivery and, when the activation's deadline is
// past the lock's end, extends the lock every half lock until the deadline
// or the job's report. It returns the deadline the worker may count on.
func (g *Gateway) hold(key camunda8.Key, s *lease.Lease, deadline time.Time) time.Time {
	h := &held{job: s.Job, subject: s.Subject, stop: make(chan struct{})}
	g.mu.Lock()
	g.held[key] = h
	g.mu.Unlock()
	lock := time.Duration(s.Job.LockDurationMs) * time.Millisecond
	if !deadline.After(s.Until) || lock <= 0 {
		go func() {
			select {
			case <-time.After(time.Until(s.Until)):
				g.forget(key, h)
			case <-h.stop:
			}
		}()
		return s.Until
	}
	go g.extend(key, h, lock, deadline)
	return deadline
}

// extend keeps h's lock until deadline, asking the engine every half lock.
func (g *Gateway) extend(key camunda8.Key, h *held, lock time.Duration, deadline time.Time) {
	defer g.forget(key, h)
	tick := time.NewTicker(lock / 2)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		if !g.opts.Now().Add(lock / 2).Before(deadline) {
			// The lock now outlasts the deadline, as Zeebe's timeout would.
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), lock/2)
		v, err := g.lender.Report(ctx, h.job, h.subject, jobs.Report{Kind: jobs.Extend, ExtendMs: lock.Milliseconds()})
		cancel()
		if err != nil || !v.Accepted {
			g.opts.Logger.Info("job lock not extended; it expires", "job", h.job.ID, "reason", v.Reason, "err", err)
			return
		}
	}
}

// forget drops a held delivery, stopping its extension.
func (g *Gateway) forget(key camunda8.Key, h *held) {
	g.mu.Lock()
	if g.held[key] == h {
		delete(g.held, key)
		close(h.stop)
	}
	g.mu.Unlock()
}

// release gives a lent delivery back unrun.
func (g *Gateway) release(key camunda8.Key) {
	g.mu.Lock()
	h := g.held[key]
	g.mu.Unlock()
	if h != nil {
		g.forget(key, h)
		go g.lender.Release(h.job, h.subject)
	}
}

// CompleteJob completes a job; its variables are the task's output (the
// task's output mappings apply).
func (g *Gateway) CompleteJob(ctx context.Context, req *pb.CompleteJobRequest) (*pb.CompleteJobResponse, error) {
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return nil, err
	}
	if err := g.report(ctx, req.GetJobKey(), "complete", jobs.Report{Kind: jobs.Complete, Output: vars}); err != nil {
		return nil, err
	}
	return &pb.CompleteJobResponse{}, nil
}

// FailJob fails a job: the worker says how many retries are left and
// after what backoff (honoured under WorkerTrusted, docs/jobs.md §4);
// retries 0 raises an incident.
func (g *Gateway) FailJob(ctx context.Context, req *pb.FailJobRequest) (*pb.FailJobResponse, error) {
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return nil, err
	}
	switch {
	case req.GetRetries() < 0:
		return nil, status.Errorf(codes.InvalidArgument, "expected retries to be at least 0, but it is %d", req.GetRetries())
	case req.GetRetryBackOff() < 0:
		return nil, status.Errorf(codes.InvalidArgument, "expected retryBackOff to be at least 0, but it is %d", req.GetRetryBackOff())
	case len(vars) > 0:
		return nil, status.Error(codes.InvalidArgument, "variables on a failed job are not supported: jetbpm's tasks have no local variable scope for them")
	}
	retries := int(req.GetRetries())
	r := jobs.Report{Kind: jobs.Fail, Message: req.GetErrorMessage(), Retries: &retries, RetryBackoffMs: req.GetRetryBackOff()}
	if err := g.report(ctx, req.GetJobKey(), "fail", r); err != nil {
		return nil, err
	}
	return &pb.FailJobResponse{}, nil
}

// ThrowError ends a job with a BPMN error, caught by a boundary or event
// subprocess; an uncaught error raises an incident.
func (g *Gateway) ThrowError(ctx context.Context, req *pb.ThrowErrorRequest) (*pb.ThrowErrorResponse, error) {
	if strings.TrimSpace(req.GetErrorCode()) == "" {
		return nil, status.Error(codes.InvalidArgument, "expected to throw an error with a non-empty errorCode, but it is blank")
	}
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return nil, err
	}
	r := jobs.Report{Kind: jobs.BpmnError, ErrorCode: req.GetErrorCode(), Message: req.GetErrorMessage(), Vars: vars}
	if err := g.report(ctx, req.GetJobKey(), "throw an error for", r); err != nil {
		return nil, err
	}
	return &pb.ThrowErrorResponse{}, nil
}

// report sends r for the delivery a job key names. The key must name the
// delivery the engine knows as current: an older one's lock has moved on,
// and a newer one was never lent by a gateway (which checks redeliveries
// in before lending them).
func (g *Gateway) report(ctx context.Context, raw int64, verb string, r jobs.Report) error {
	notFound := func(why string) error {
		return status.Errorf(codes.NotFound, "expected to %s job with key '%d', but no such job was found%s", verb, raw, why)
	}
	key, err := camunda8.ParseKey(raw, g.eng.Partitions())
	if err != nil {
		return notFound(": " + err.Error())
	}
	seq, count, err := key.Job()
	if err != nil {
		return notFound(": " + err.Error())
	}
	g.mu.Lock()
	h := g.held[key]
	g.mu.Unlock()
	if h != nil {
		// Lent by this node: the subject is the delivery's own, and the
		// engine fences it.
		if err := mayWork(ctx, h.job.Topic); err != nil {
			return err
		}
		return g.send(ctx, key, h.job, h.subject, raw, verb, r)
	}
	job, err := g.lender.Job(ctx, "", seq)
	if errors.Is(err, lease.ErrGone) {
		return notFound("")
	}
	if err != nil {
		return grpcError(err)
	}
	if g.eng.PartitionOf(job.Instance)+1 != key.Partition() {
		return notFound("")
	}
	if err := mayWork(ctx, job.Topic); err != nil {
		return err
	}
	view, err := g.eng.Job(ctx, job.Instance, job.ID)
	if errors.Is(err, engine.ErrNotFound) {
		return notFound("")
	}
	if err != nil {
		return grpcError(err)
	}
	current := max(view.Job.Delivery, 1)
	if count != min(current, 255) {
		return notFound(fmt.Sprintf(": the key names delivery %d, the job's current delivery is %d", count, current))
	}
	subject, err := g.subject(ctx, job, seq, current)
	if err != nil {
		return grpcError(err)
	}
	return g.send(ctx, key, job, subject, raw, verb, r)
}

// send sends a report for a job's delivery and maps the engine's verdict.
func (g *Gateway) send(ctx context.Context, key camunda8.Key, job *jobs.Job, subject string, raw int64, verb string, r jobs.Report) error {
	v, err := g.lender.Report(ctx, job, subject, r)
	if errors.Is(err, engine.ErrTooLarge) {
		return status.Errorf(codes.ResourceExhausted, "job %d: %v", raw, err)
	}
	if err != nil {
		return status.Errorf(codes.Unavailable, "job %d: %v", raw, err)
	}
	if !v.Accepted {
		if strings.Contains(v.Reason, "unknown or finished job") || strings.Contains(v.Reason, "stale") || strings.Contains(v.Reason, "already sent back") {
			return status.Errorf(codes.NotFound, "expected to %s job with key '%d', but no such job was found: %s", verb, raw, v.Reason)
		}
		return status.Errorf(codes.FailedPrecondition, "expected to %s job with key '%d', but the engine refused: %s", verb, raw, v.Reason)
	}
	g.mu.Lock()
	h := g.held[key]
	g.mu.Unlock()
	if h != nil {
		g.forget(key, h)
	}
	return nil
}

// subject rebuilds the ack reply subject of delivery count of the job
// message at seq, for a report through a node that did not lend it. It
// carries the consumer's last delivered sequence where the
// delivery's own would be: the server reads the stream sequence and, for
// a nak only, checks the consumer sequence against the consumer's range,
// which that value satisfies while the message is pending.
func (g *Gateway) subject(ctx context.Context, job *jobs.Job, seq, count uint64) (string, error) {
	cons, err := g.lender.Consumer(ctx, job.Topic)
	if err != nil {
		return "", err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return "", err
	}
	return "$JS.ACK." + streams.JobsStream + "." + streams.TopicConsumer(job.Topic) + "." + strconv.FormatUint(count, 10) + "." +
		strconv.FormatUint(seq, 10) + "." + strconv.FormatUint(info.Delivered.Consumer, 10) + "." +
		strconv.FormatInt(g.opts.Now().UnixNano(), 10) + ".0", nil
}

// mayWork refuses a worker credential the jobs of a topic it does not
// serve; with no credentials checked (no Authenticate) everyone may.
func mayWork(ctx context.Context, topic string) error {
	if p := httpauth.FromContext(ctx); p != nil && !p.MayWork(topic) {
		return status.Errorf(codes.PermissionDenied, "%s may not work jobs of type %q", p.Name, topic)
	}
	return nil
}
