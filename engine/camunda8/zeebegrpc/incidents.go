package zeebegrpc

import (
	"context"
	"errors"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/incidents"
)

// ResolveIncident retries the incident's node: a job is queued again with
// its task's retries, an expression evaluated again. jetbpm keeps the
// incident open while that retry runs (it closes when the node completes,
// and is raised again when it fails); to a Zeebe client it is resolved:
// resolving it again, or a key that names no incident, is NOT_FOUND.
func (g *Gateway) ResolveIncident(ctx context.Context, req *pb.ResolveIncidentRequest) (*pb.ResolveIncidentResponse, error) {
	notFound := status.Errorf(codes.NotFound, "expected to resolve incident with key '%d', but no such incident was found", req.GetIncidentKey())
	k, err := camunda8.ParseKey(req.GetIncidentKey(), g.eng.Partitions())
	if err != nil {
		return nil, notFound
	}
	id, err := g.ids.Incident(ctx, k)
	if errors.Is(err, camunda8.ErrBadKey) {
		return nil, notFound
	}
	if err != nil {
		return nil, grpcError(err)
	}
	// An incident just raised may have no record yet (it is written after
	// its instance's checkpoint): RetryIncident finds it there.
	v, err := g.eng.Incident(ctx, id)
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return nil, grpcError(err)
	}
	if err == nil && (v.State.Closed() || retrying(v.Record)) {
		return nil, status.Errorf(codes.NotFound, "expected to resolve incident with key '%d', but it is not open: it was resolved already", req.GetIncidentKey())
	}
	if err := g.eng.RetryIncident(ctx, id); err != nil {
		if errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrFinished) {
			return nil, status.Errorf(codes.NotFound, "expected to resolve incident with key '%d', but it is not open: %v", req.GetIncidentKey(), err)
		}
		return nil, grpcError(err)
	}
	return &pb.ResolveIncidentResponse{}, nil
}

// UpdateJobRetries is refused: a job's retries are its task's retry
// policy's, kept by the engine, and a worker sets them when it fails the
// job (FailJob's retries); a job in an incident is retried by resolving
// the incident.
func (g *Gateway) UpdateJobRetries(context.Context, *pb.UpdateJobRetriesRequest) (*pb.UpdateJobRetriesResponse, error) {
	return nil, status.Error(codes.Unimplemented, "UpdateJobRetries is not supported by jetbpm: a job's retries come from its task's retry policy, a worker sets them when it fails the job (FailJob), and a job in an incident runs again when the incident is resolved (ResolveIncident)")
}

// retrying reports whether an open incident's last transition is a retry
// that has not failed yet.
func retrying(r *incidents.Record) bool {
	return len(r.History) > 0 && r.History[len(r.History)-1].Kind == incidents.Retried
}
