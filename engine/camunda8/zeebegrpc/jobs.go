package zeebegrpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/jobs"
)

// A Zeebe worker activates jobs and reports them by key; camunda8.Jobs
// does the work (docs/camunda8-migration.md §2–§4), these map it onto the
// protocol.

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
	got := g.svc.Jobs().Activate(ctx, camunda8.Activation{Type: req.GetType(), Worker: req.GetWorker(),
		Timeout: time.Duration(req.GetTimeout()) * time.Millisecond, Wait: wait,
		Max: min(int(req.GetMaxJobsToActivate()), maxActivate), FetchVariables: req.GetFetchVariable()})
	if len(got) == 0 {
		return nil
	}
	resp := &pb.ActivateJobsResponse{Jobs: make([]*pb.ActivatedJob, 0, len(got))}
	for _, j := range got {
		doc, err := json.Marshal(j.Variables)
		if err != nil {
			return status.Errorf(codes.Internal, "job %d: encode its variables: %v", j.Key, err)
		}
		headers, _ := json.Marshal(j.CustomHeaders)
		resp.Jobs = append(resp.Jobs, &pb.ActivatedJob{
			Key: int64(j.Key), Type: j.Type, ProcessInstanceKey: int64(j.ProcessInstanceKey), BpmnProcessId: j.BpmnProcessID,
			ProcessDefinitionVersion: int32(j.Version), ProcessDefinitionKey: int64(j.DefinitionKey), ElementId: j.ElementID,
			ElementInstanceKey: int64(j.ElementInstanceKey), CustomHeaders: string(headers), Worker: j.Worker,
			Retries: int32(min(j.Retries, 1<<31-1)), Deadline: j.Deadline.UnixMilli(), Variables: string(doc),
		})
	}
	if err := srv.Send(resp); err != nil {
		for _, j := range got {
			g.svc.Jobs().Release(j.Key)
		}
		return err
	}
	return nil
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

// report sends r for the job key raw names and maps the outcome onto
// Zeebe's codes.
func (g *Gateway) report(ctx context.Context, raw int64, verb string, r jobs.Report) error {
	err := g.svc.Jobs().Report(ctx, raw, r, func(topic string) error { return mayWork(ctx, topic) })
	switch {
	case err == nil:
		return nil
	case status.Code(err) == codes.PermissionDenied:
		return err
	case errors.Is(err, camunda8.ErrJobNotFound):
		return status.Errorf(codes.NotFound, "expected to %s job with key '%d', but no such job was found: %v", verb, raw, err)
	case errors.Is(err, camunda8.ErrReportRefused):
		return status.Errorf(codes.FailedPrecondition, "expected to %s job with key '%d', but the engine refused: %v", verb, raw, err)
	case errors.Is(err, engine.ErrTooLarge):
		return status.Errorf(codes.ResourceExhausted, "job %d: %v", raw, err)
	}
	return status.Errorf(codes.Unavailable, "job %d: %v", raw, err)
}

// mayWork refuses a worker credential the jobs of a topic it does not
// serve; with no credentials checked (no Authenticate) everyone may.
func mayWork(ctx context.Context, topic string) error {
	if p := httpauth.FromContext(ctx); p != nil && !p.MayWork(topic) {
		return status.Errorf(codes.PermissionDenied, "%s may not work jobs of type %q", p.Name, topic)
	}
	return nil
}
