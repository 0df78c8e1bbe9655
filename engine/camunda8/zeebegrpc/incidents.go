package zeebegrpc

import (
	"context"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ResolveIncident retries the incident's node: a job is queued again with
// its task's retries, an expression evaluated again. jetbpm keeps the
// incident open while that retry runs (it closes when the node completes,
// and is raised again when it fails); to a Zeebe client it is resolved:
// resolving it again, or a key that names no incident, is NOT_FOUND.
func (g *Gateway) ResolveIncident(ctx context.Context, req *pb.ResolveIncidentRequest) (*pb.ResolveIncidentResponse, error) {
	if err := g.svc.ResolveIncident(ctx, req.GetIncidentKey()); err != nil {
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
