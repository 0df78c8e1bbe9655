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
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lease"
	"github.com/jetbpm/jetbpm/streams"
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
	eng    *engine.Engine
	ids    *camunda8.IDs
	lender *lease.Lender
	jobs   *camunda8.Jobs
	opts   Options
}

// New returns a gateway over eng; js reaches the Camunda 8 keys bucket
// (streams.C8KeysBucket, provisioned with the engine's streams).
func New(eng *engine.Engine, js jetstream.JetStream, opts Options) (*Gateway, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, streams.C8KeysBucket)
	if err != nil {
		return nil, fmt.Errorf("zeebe gateway: keys bucket %s: %w", streams.C8KeysBucket, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "8.3.0"
	}
	if opts.LongPoll <= 0 {
		opts.LongPoll = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l, err := lease.New(eng, js.Conn(), lease.Options{Logger: opts.Logger, VerdictTimeout: opts.VerdictTimeout, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("zeebe gateway: %w", err)
	}
	ids := camunda8.NewIDs(kv, eng.Partitions(), eng.PartitionOf)
	return &Gateway{eng: eng, ids: ids, lender: l, jobs: camunda8.NewJobs(eng, ids, l, opts.Now, opts.Logger), opts: opts}, nil
}

// Close stops extending the locks of activated jobs (they expire, and the
// jobs return to the queue, unless reported first) and stops receiving
// verdicts. Call it after the server stopped.
func (g *Gateway) Close() {
	g.jobs.Close()
	g.lender.Close()
}

// Register registers the gateway's service on s.
func (g *Gateway) Register(s *grpc.Server) { pb.RegisterGatewayServer(s, g) }

// Topology reports this node as the one broker, leading every partition:
// jetbpm's partitions are not owned by nodes.
func (g *Gateway) Topology(ctx context.Context, _ *pb.TopologyRequest) (*pb.TopologyResponse, error) {
	n := g.eng.Partitions()
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
	if len(req.GetResources()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "expected to deploy at least one resource, but none given")
	}
	var files []engine.Resource
	for _, r := range req.GetResources() {
		if !strings.HasSuffix(r.GetName(), ".bpmn") && !strings.HasSuffix(r.GetName(), ".xml") {
			return nil, status.Errorf(codes.InvalidArgument, "resource %q: jetbpm deploys BPMN files (.bpmn, .xml); decisions (DMN) and forms are not supported yet", r.GetName())
		}
		files = append(files, engine.Resource{Name: r.GetName(), XML: r.GetContent()})
	}
	deps, err := g.eng.DeployResources(ctx, files...)
	if err != nil {
		return nil, grpcError(err)
	}
	key, err := g.ids.NewKey(ctx, 1)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &pb.DeployResourceResponse{Key: int64(key)}
	for _, d := range deps {
		dk, err := g.ids.DefinitionKey(ctx, d.ProcessID, d.Version)
		if err != nil {
			return nil, grpcError(err)
		}
		out.Deployments = append(out.Deployments, &pb.Deployment{Metadata: &pb.Deployment_Process{Process: &pb.ProcessMetadata{
			BpmnProcessId: d.ProcessID, Version: int32(d.Version), ProcessDefinitionKey: int64(dk), ResourceName: d.Resource,
		}}})
	}
	return out, nil
}

// definition resolves what a create request names: a definition key, or
// a process id with a version (-1 or 0: the latest).
func (g *Gateway) definition(ctx context.Context, req *pb.CreateProcessInstanceRequest) (processID string, version int, key camunda8.Key, err error) {
	if req.GetProcessDefinitionKey() != 0 {
		k, err := camunda8.ParseKey(req.GetProcessDefinitionKey(), g.eng.Partitions())
		if err == nil {
			processID, version, err = g.ids.Definition(ctx, k)
		}
		if err != nil {
			return "", 0, 0, status.Errorf(codes.NotFound, "expected to find process definition with key '%d', but none found", req.GetProcessDefinitionKey())
		}
		return processID, version, k, nil
	}
	if req.GetBpmnProcessId() == "" {
		return "", 0, 0, status.Error(codes.InvalidArgument, "expected either a processDefinitionKey or a bpmnProcessId, but none given")
	}
	v := int(req.GetVersion())
	if v < 0 {
		v = 0
	}
	p, err := g.eng.Process(ctx, req.GetBpmnProcessId(), v) // cached: no listing on the start path
	if err != nil {
		return "", 0, 0, grpcError(err)
	}
	key, err = g.ids.DefinitionKey(ctx, p.ID, p.Version)
	if err != nil {
		return "", 0, 0, grpcError(err)
	}
	return p.ID, p.Version, key, nil
}

// start creates the instance req names and returns its response.
func (g *Gateway) start(ctx context.Context, req *pb.CreateProcessInstanceRequest) (*pb.CreateProcessInstanceResponse, string, error) {
	if len(req.GetStartInstructions()) > 0 {
		return nil, "", status.Error(codes.Unimplemented, "start instructions are not supported by jetbpm yet: an instance starts at its none start event")
	}
	vars, err := variables("variables", req.GetVariables())
	if err != nil {
		return nil, "", err
	}
	processID, version, defKey, err := g.definition(ctx, req)
	if err != nil {
		return nil, "", err
	}
	key, id, err := g.ids.NewInstance(ctx)
	if err != nil {
		return nil, "", grpcError(err)
	}
	if _, err := g.eng.Start(ctx, processID, vars, engine.Version(version), engine.InstanceID(id)); err != nil {
		return nil, "", grpcError(err)
	}
	return &pb.CreateProcessInstanceResponse{ProcessDefinitionKey: int64(defKey), BpmnProcessId: processID, Version: int32(version),
		ProcessInstanceKey: int64(key)}, id, nil
}

// CreateProcessInstance starts an instance.
func (g *Gateway) CreateProcessInstance(ctx context.Context, req *pb.CreateProcessInstanceRequest) (*pb.CreateProcessInstanceResponse, error) {
	res, _, err := g.start(ctx, req)
	return res, err
}

// CreateProcessInstanceWithResult starts an instance and waits until it
// completes (requestTimeout, else the call's deadline); the instance runs
// on when the wait ends first.
func (g *Gateway) CreateProcessInstanceWithResult(ctx context.Context, req *pb.CreateProcessInstanceWithResultRequest) (*pb.CreateProcessInstanceWithResultResponse, error) {
	if req.GetRequest() == nil {
		return nil, status.Error(codes.InvalidArgument, "expected a request, but none given")
	}
	res, id, err := g.start(ctx, req.GetRequest())
	if err != nil {
		return nil, err
	}
	wctx := ctx
	if t := req.GetRequestTimeout(); t > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Millisecond)
		defer cancel()
	}
	v, err := g.eng.Wait(wctx, id)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, status.Errorf(codes.DeadlineExceeded, "process instance %d did not complete within the request timeout; it runs on", res.ProcessInstanceKey)
	case err != nil:
		return nil, grpcError(err)
	case v.Status != instance.Completed:
		return nil, status.Errorf(codes.FailedPrecondition, "process instance %d ended %s, not completed", res.ProcessInstanceKey, v.Status)
	}
	out := v.Variables
	if names := req.GetFetchVariables(); len(names) > 0 {
		out = map[string]any{}
		for _, n := range names {
			if x, ok := v.Variables[n]; ok {
				out[n] = x
			}
		}
	}
	doc, err := json.Marshal(out)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode the result variables: %v", err)
	}
	return &pb.CreateProcessInstanceWithResultResponse{ProcessDefinitionKey: res.ProcessDefinitionKey, BpmnProcessId: res.BpmnProcessId,
		Version: res.Version, ProcessInstanceKey: res.ProcessInstanceKey, Variables: string(doc)}, nil
}

// instance resolves an instance key.
func (g *Gateway) instance(ctx context.Context, key int64) (string, error) {
	k, err := camunda8.ParseKey(key, g.eng.Partitions())
	var id string
	if err == nil {
		id, err = g.ids.Instance(ctx, k)
	}
	if err != nil {
		return "", status.Errorf(codes.NotFound, "expected to find a process instance with key '%d', but none found", key)
	}
	return id, nil
}

// CancelProcessInstance terminates an active instance.
func (g *Gateway) CancelProcessInstance(ctx context.Context, req *pb.CancelProcessInstanceRequest) (*pb.CancelProcessInstanceResponse, error) {
	id, err := g.instance(ctx, req.GetProcessInstanceKey())
	if err != nil {
		return nil, err
	}
	if err := g.eng.Cancel(ctx, id, "cancelled by a Camunda 8 client"); err != nil {
		if errors.Is(err, engine.ErrFinished) || errors.Is(err, engine.ErrNotFound) {
			return nil, status.Errorf(codes.NotFound, "expected to cancel a process instance with key '%d', but no active instance has it", req.GetProcessInstanceKey())
		}
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
	id, err := g.instance(ctx, req.GetElementInstanceKey())
	if err != nil {
		return nil, err
	}
	if _, err := g.eng.SetVariables(ctx, id, vars); err != nil {
		if errors.Is(err, engine.ErrFinished) {
			return nil, status.Errorf(codes.NotFound, "expected to update variables of process instance '%d', but it is not active", req.GetElementInstanceKey())
		}
		return nil, grpcError(err)
	}
	key, err := g.ids.NewKey(ctx, camunda8.Key(req.GetElementInstanceKey()).Partition())
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
	if req.GetTimeToLive() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "timeToLive %d is negative", req.GetTimeToLive())
	}
	m := engine.Message{Name: req.GetName(), Key: req.GetCorrelationKey(), Vars: vars,
		TTL: time.Duration(req.GetTimeToLive()) * time.Millisecond, ID: req.GetMessageId()}
	if _, err := g.eng.PublishMessage(ctx, m); err != nil {
		if errors.Is(err, engine.ErrDuplicate) {
			return nil, status.Errorf(codes.AlreadyExists, "expected to publish a new message with id '%s', but a message with that id was already published", req.GetMessageId())
		}
		return nil, grpcError(err)
	}
	key, err := g.ids.NewKey(ctx, 1)
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
	if _, err := g.eng.BroadcastSignal(ctx, engine.Signal{Name: req.GetSignalName(), Vars: vars}); err != nil {
		return nil, grpcError(err)
	}
	key, err := g.ids.NewKey(ctx, 1)
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
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}
