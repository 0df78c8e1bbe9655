// Package zeebegrpc serves the Zeebe gateway protocol (gRPC,
// gateway_protocol.Gateway) over an engine node, so that Camunda 8
// clients — the Zeebe Go client, the Java and Node SDKs' gRPC clients —
// deploy, start, cancel, message and work jobs through jetbpm unmodified
// (docs/camunda8-migration.md §3). Keys are engine/camunda8's.
//
//	gw, err := zeebegrpc.New(eng, js, zeebegrpc.Options{})
//	srv := grpc.NewServer()
//	gw.Register(srv)
//	srv.Serve(lis)
//
// The messages and service are the generated code of the gateway protocol
// shipped with the Apache-2.0 Zeebe Go client (pkg/pb, v8.3.0).
package zeebegrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the Camunda 8 SDKs compress their messages
	"google.golang.org/grpc/status"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
)

// Options configures a Gateway; the zero value works.
type Options struct {
	// Host and Port are what Topology reports for this node.
	Host string
	Port int32
	// Version is the gateway and broker version Topology reports.
	Version string
	Logger  *slog.Logger
	// LongPoll is how long ActivateJobs waits for a first job when the
	// request sets no requestTimeout (default 10 s, as Zeebe's gateway).
	LongPoll time.Duration
	// VerdictTimeout bounds the wait for the engine's answer to a job
	// report (default 30 s): past it the call fails UNAVAILABLE.
	VerdictTimeout time.Duration
	// Now is the clock of job deadlines (default time.Now).
	Now func() time.Time
}

// Gateway serves gateway_protocol.Gateway over an engine. RPCs it does
// not serve answer UNIMPLEMENTED, naming what brings them.
type Gateway struct {
	pb.UnimplementedGatewayServer
	svc  *camunda8.Service
	opts Options
}

// New returns a gateway over eng; js reaches the Camunda 8 keys bucket
// (streams.C8KeysBucket, provisioned with the engine's streams).
func New(eng *engine.Engine, js jetstream.JetStream, opts Options) (*Gateway, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "8.3.0"
	}
	if opts.LongPoll <= 0 {
		opts.LongPoll = 10 * time.Second
	}
	svc, err := camunda8.NewService(eng, js, camunda8.Options{Logger: opts.Logger, VerdictTimeout: opts.VerdictTimeout, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("zeebe gateway: %w", err)
	}
	return &Gateway{svc: svc, opts: opts}, nil
}

// Close stops extending the locks of activated jobs (they expire, and the
// jobs return to the queue, unless reported first) and stops receiving
// verdicts. Call it after the server stopped.
func (g *Gateway) Close() { g.svc.Close() }

// Register registers the gateway's service on s.
func (g *Gateway) Register(s *grpc.Server) { pb.RegisterGatewayServer(s, g) }

// Topology reports this node as the one broker, leading every partition:
// jetbpm's partitions are not owned by nodes.
func (g *Gateway) Topology(ctx context.Context, _ *pb.TopologyRequest) (*pb.TopologyResponse, error) {
	n := g.svc.Engine().Partitions()
	parts := make([]*pb.Partition, n)
	for i := range parts {
		parts[i] = &pb.Partition{PartitionId: int32(i + 1), Role: pb.Partition_LEADER, Health: pb.Partition_HEALTHY}
	}
	return &pb.TopologyResponse{
		Brokers:     []*pb.BrokerInfo{{NodeId: 0, Host: g.opts.Host, Port: g.opts.Port, Partitions: parts, Version: g.opts.Version}},
		ClusterSize: 1, PartitionsCount: int32(n), ReplicationFactor: 1, GatewayVersion: g.opts.Version,
	}, nil
}

// DeployResource deploys BPMN resources, all or none.
func (g *Gateway) DeployResource(ctx context.Context, req *pb.DeployResourceRequest) (*pb.DeployResourceResponse, error) {
	var files []engine.Resource
	for _, r := range req.GetResources() {
		files = append(files, engine.Resource{Name: r.GetName(), XML: r.GetContent()})
	}
	dep, err := g.svc.Deploy(ctx, files)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &pb.DeployResourceResponse{Key: int64(dep.Key)}
	for _, d := range dep.Processes {
		out.Deployments = append(out.Deployments, &pb.Deployment{Metadata: &pb.Deployment_Process{Process: &pb.ProcessMetadata{
			BpmnProcessId: d.ProcessID, Version: int32(d.Version), ProcessDefinitionKey: int64(d.Key), ResourceName: d.Resource,
		}}})
	}
	return out, nil
}

// start creates the instance req names.
func (g *Gateway) start(ctx context.Context, req *pb.CreateProcessInstanceRequest) (camunda8.Started, error) {
	if len(req.GetStartInstructions()) > 0 {
		return camunda8.Started{}, status.Error(codes.Unimplemented, "start instructions are not supported by jetbpm yet: an instance starts at its none start event")
	}
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return camunda8.Started{}, err
	}
	st, err := g.svc.Start(ctx, camunda8.Start{DefinitionKey: req.GetProcessDefinitionKey(), ProcessID: req.GetBpmnProcessId(),
		Version: int(req.GetVersion()), Variables: vars})
	if err != nil {
		return camunda8.Started{}, grpcError(err)
	}
	return st, nil
}

// CreateProcessInstance starts an instance.
func (g *Gateway) CreateProcessInstance(ctx context.Context, req *pb.CreateProcessInstanceRequest) (*pb.CreateProcessInstanceResponse, error) {
	st, err := g.start(ctx, req)
	if err != nil {
		return nil, err
	}
	return &pb.CreateProcessInstanceResponse{ProcessDefinitionKey: int64(st.DefinitionKey), BpmnProcessId: st.ProcessID,
		Version: int32(st.Version), ProcessInstanceKey: int64(st.InstanceKey)}, nil
}

// CreateProcessInstanceWithResult starts an instance and waits until it
// completes (requestTimeout, else the call's deadline); the instance runs
// on when the wait ends first.
func (g *Gateway) CreateProcessInstanceWithResult(ctx context.Context, req *pb.CreateProcessInstanceWithResultRequest) (*pb.CreateProcessInstanceWithResultResponse, error) {
	if req.GetRequest() == nil {
		return nil, status.Error(codes.InvalidArgument, "expected a request, but none given")
	}
	st, err := g.start(ctx, req.GetRequest())
	if err != nil {
		return nil, err
	}
	vars, err := g.svc.Await(ctx, st, time.Duration(max(req.GetRequestTimeout(), 0))*time.Millisecond, req.GetFetchVariables())
	if err != nil {
		return nil, grpcError(err)
	}
	doc, err := json.Marshal(vars)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode the result variables: %v", err)
	}
	return &pb.CreateProcessInstanceWithResultResponse{ProcessDefinitionKey: int64(st.DefinitionKey), BpmnProcessId: st.ProcessID,
		Version: int32(st.Version), ProcessInstanceKey: int64(st.InstanceKey), Variables: string(doc)}, nil
}

// CancelProcessInstance terminates an active instance.
func (g *Gateway) CancelProcessInstance(ctx context.Context, req *pb.CancelProcessInstanceRequest) (*pb.CancelProcessInstanceResponse, error) {
	if err := g.svc.Cancel(ctx, req.GetProcessInstanceKey()); err != nil {
		return nil, grpcError(err)
	}
	return &pb.CancelProcessInstanceResponse{}, nil
}

// SetVariables writes variables to an instance's process-level scope.
// jetbpm's element instances have no keys yet: the key must be the
// instance's.
func (g *Gateway) SetVariables(ctx context.Context, req *pb.SetVariablesRequest) (*pb.SetVariablesResponse, error) {
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return nil, err
	}
	key, err := g.svc.SetVariables(ctx, req.GetElementInstanceKey(), vars)
	if err != nil {
		return nil, grpcError(err)
	}
	return &pb.SetVariablesResponse{Key: int64(key)}, nil
}

// PublishMessage publishes a message, buffered for timeToLive.
func (g *Gateway) PublishMessage(ctx context.Context, req *pb.PublishMessageRequest) (*pb.PublishMessageResponse, error) {
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return nil, err
	}
	key, err := g.svc.Publish(ctx, engine.Message{Name: req.GetName(), Key: req.GetCorrelationKey(), Vars: vars,
		TTL: time.Duration(req.GetTimeToLive()) * time.Millisecond, ID: req.GetMessageId()})
	if err != nil {
		return nil, grpcError(err)
	}
	return &pb.PublishMessageResponse{Key: int64(key)}, nil
}

// BroadcastSignal broadcasts a signal.
func (g *Gateway) BroadcastSignal(ctx context.Context, req *pb.BroadcastSignalRequest) (*pb.BroadcastSignalResponse, error) {
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return nil, err
	}
	key, err := g.svc.Broadcast(ctx, engine.Signal{Name: req.GetSignalName(), Vars: vars})
	if err != nil {
		return nil, grpcError(err)
	}
	return &pb.BroadcastSignalResponse{Key: int64(key)}, nil
}

// variables decodes a variables document: "" is none, else a JSON object.
func variables(field, doc string) (map[string]any, error) {
	if strings.TrimSpace(doc) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber()
	var vars map[string]any
	if err := dec.Decode(&vars); err != nil || vars == nil {
		return nil, status.Errorf(codes.InvalidArgument, "expected %s to be a JSON object, but it is not: %.200q", field, doc)
	}
	if dec.More() {
		return nil, status.Errorf(codes.InvalidArgument, "expected %s to be one JSON object, but more follows it", field)
	}
	return vars, nil
}

// grpcError maps an engine error onto Zeebe's status codes.
func grpcError(err error) error {
	code := codes.Internal
	switch {
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, camunda8.ErrBadKey):
		code = codes.NotFound
	case errors.Is(err, engine.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, engine.ErrTooLarge):
		code = codes.ResourceExhausted
	case errors.Is(err, engine.ErrFinished), errors.Is(err, engine.ErrConflict):
		code = codes.FailedPrecondition
	case errors.Is(err, engine.ErrDuplicate):
		code = codes.AlreadyExists
	case errors.Is(err, engine.ErrClosed):
		code = codes.Unavailable
	case errors.Is(err, errors.ErrUnsupported):
		code = codes.Unimplemented
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}
