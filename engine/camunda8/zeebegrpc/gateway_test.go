//lint:file-ignore SA1019 the tests call the deprecated RPCs older clients still send

package zeebegrpc_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"github.com/camunda/zeebe/clients/go/v8/pkg/zbc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8/zeebegrpc"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// ordersBPMN is a Zeebe model: "order" waits for message "paid" under
// its orderId, then doubles amount; "quick" doubles at once; "hold"
// waits for signal "release".
var ordersBPMN = testdata("orders.bpmn")

type fixture struct {
	env    *streamstest.Env
	eng    *engine.Engine
	client zbc.Client
	raw    pb.GatewayClient // the protocol as it is, for what the client checks itself
	addr   string
}

func setup(t *testing.T, opts ...grpc.ServerOption) *fixture {
	t.Helper()
	return setupWith(t, engine.Options{}, opts...)
}

// setupWith serves a gateway with server options opts over an engine
// opened with eo.
func setupWith(t *testing.T, eo engine.Options, opts ...grpc.ServerOption) *fixture {
	t.Helper()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, eo)
	f := &fixture{env: env, eng: eng}
	f.addr = f.serve(t, opts...)
	f.client = f.dial(t, nil)
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	f.raw = pb.NewGatewayClient(conn)
	return f
}

// serve serves a new gateway over f's engine and returns its address.
func (f *fixture) serve(t *testing.T, opts ...grpc.ServerOption) string {
	t.Helper()
	gw, err := zeebegrpc.New(f.eng, f.env.JS, zeebegrpc.Options{Host: "127.0.0.1", Port: 26500})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	gw.Register(srv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); gw.Close() })
	return lis.Addr().String()
}

// another returns a client of a second gateway over f's engine, as
// another engine node would serve it.
func (f *fixture) another(t *testing.T) zbc.Client {
	t.Helper()
	addr := f.serve(t)
	client, err := zbc.NewClient(&zbc.ClientConfig{GatewayAddress: addr, UsePlaintextConnection: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// dial returns a Zeebe client of the gateway presenting creds (none when nil).
func (f *fixture) dial(t *testing.T, creds zbc.CredentialsProvider) zbc.Client {
	t.Helper()
	client, err := zbc.NewClient(&zbc.ClientConfig{GatewayAddress: f.addr, UsePlaintextConnection: true, CredentialsProvider: creds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, what string, err error, code codes.Code, text string) {
	t.Helper()
	if s, ok := status.FromError(err); !ok || s.Code() != code || !strings.Contains(s.Message(), text) {
		t.Errorf("%s: %v, want %s saying %q", what, err, code, text)
	}
}

// The Zeebe Go client, unmodified, reads the topology, deploys, starts,
// publishes a message, waits for a result, cancels, sets variables and
// broadcasts a signal.
func TestZeebeGoClient(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	c := f.client

	topo, err := c.NewTopologyCommand().Send(ctx)
	if err != nil || topo.PartitionsCount != int32(f.eng.Partitions()) || len(topo.Brokers) != 1 || len(topo.Brokers[0].Partitions) != f.eng.Partitions() {
		t.Fatalf("topology %+v, %v", topo, err)
	}

	dep, err := c.NewDeployResourceCommand().AddResource([]byte(ordersBPMN), "orders.bpmn").Send(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]int64{}
	for _, d := range dep.GetDeployments() {
		p := d.GetProcess()
		if p.GetVersion() != 1 || p.GetResourceName() != "orders.bpmn" || p.GetProcessDefinitionKey() <= 0 {
			t.Errorf("deployed %+v", p)
		}
		defs[p.GetBpmnProcessId()] = p.GetProcessDefinitionKey()
	}
	if len(defs) != 3 || dep.GetKey() <= 0 {
		t.Fatalf("deployment %+v", dep)
	}
	// The deprecated DeployProcess of older clients: the same file again
	// keeps its versions and keys.
	old, err := f.raw.DeployProcess(ctx, &pb.DeployProcessRequest{Processes: []*pb.ProcessRequestObject{{Name: "orders.bpmn", Definition: []byte(ordersBPMN)}}})
	if err != nil || len(old.GetProcesses()) != 3 {
		t.Fatalf("DeployProcess %+v, %v", old, err)
	}
	for _, p := range old.GetProcesses() {
		if p.GetVersion() != 1 || p.GetProcessDefinitionKey() != defs[p.GetBpmnProcessId()] {
			t.Errorf("redeployed %+v, want version 1 and key %d", p, defs[p.GetBpmnProcessId()])
		}
	}

	// Start by id, publish its message, and it completes.
	cmd, err := c.NewCreateInstanceCommand().BPMNProcessId("order").LatestVersion().VariablesFromMap(map[string]any{"orderId": "o-1", "amount": 21})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := cmd.Send(ctx)
	if err != nil || inst.GetProcessDefinitionKey() != defs["order"] || inst.GetVersion() != 1 || inst.GetProcessInstanceKey() <= 0 {
		t.Fatalf("create %+v, %v", inst, err)
	}
	id := inst.GetProcessInstanceKey()
	v, err := f.eng.WaitUntil(ctx, strKey(id), func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "paid" })
	if err != nil {
		t.Fatalf("instance %d: %+v %v", id, v, err)
	}
	msg, err := c.NewPublishMessageCommand().MessageName("paid").CorrelationKey("o-1").MessageId("m-1").TimeToLive(time.Minute).Send(ctx)
	if err != nil || msg.GetKey() <= 0 {
		t.Fatalf("publish %+v, %v", msg, err)
	}
	_, err = c.NewPublishMessageCommand().MessageName("paid").CorrelationKey("o-1").MessageId("m-1").TimeToLive(time.Minute).Send(ctx)
	wantCode(t, "a message id again", err, codes.AlreadyExists, "m-1")
	if v, err := f.eng.Wait(ctx, strKey(id)); err != nil || v.Status != instance.Completed || v.Variables["doubled"] != int64(42) {
		t.Fatalf("after the message: %+v %v", v, err)
	}

	// With result, by definition key, fetching one variable.
	wr, err := c.NewCreateInstanceCommand().ProcessDefinitionKey(defs["quick"]).VariablesFromMap(map[string]any{"amount": 5, "other": true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := wr.WithResult().FetchVariables("doubled").Send(ctx)
	if err != nil || res.GetVariables() != `{"doubled":10}` {
		t.Fatalf("with result %+v, %v", res, err)
	}

	// Cancel a waiting instance; cancelling again is NOT_FOUND.
	held, err := c.NewCreateInstanceCommand().BPMNProcessId("hold").LatestVersion().Send(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.NewSetVariablesCommand().ElementInstanceKey(held.GetProcessInstanceKey()).VariablesFromMap(map[string]any{"note": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := set.Send(ctx); err != nil || r.GetKey() <= 0 {
		t.Fatalf("set variables %+v, %v", r, err)
	}
	if _, err := c.NewCancelInstanceCommand().ProcessInstanceKey(held.GetProcessInstanceKey()).Send(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.NewCancelInstanceCommand().ProcessInstanceKey(held.GetProcessInstanceKey()).Send(ctx)
	wantCode(t, "cancel twice", err, codes.NotFound, "no active instance")

	// A signal releases a waiting instance.
	held, err = c.NewCreateInstanceCommand().BPMNProcessId("hold").LatestVersion().Send(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hid := strKey(held.GetProcessInstanceKey())
	if _, err := f.eng.WaitUntil(ctx, hid, func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "wait" }); err != nil {
		t.Fatal(err)
	}
	// The signal index learns of the wait just after the checkpoint.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.NewBroadcastSignalCommand().SignalName("release").Send(ctx); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		v, err := f.eng.Wait(wctx, hid)
		cancel()
		if err == nil && v.Status == instance.Completed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the signal did not release %s: %+v %v", hid, v, err)
		}
	}
}

// Bad requests are refused in the client's terms and change nothing.
func TestZeebeRefusals(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	c := f.client
	_, err := c.NewCreateInstanceCommand().BPMNProcessId("nope").LatestVersion().Send(ctx)
	wantCode(t, "unknown process", err, codes.NotFound, `"nope"`)
	_, err = c.NewCreateInstanceCommand().ProcessDefinitionKey(2251799813685299).Send(ctx)
	wantCode(t, "unknown definition key", err, codes.NotFound, "2251799813685299")
	for _, vars := range []string{`[1, 2]`, `{"a": 1} {}`, `{"a":`, `null`} {
		_, err = f.raw.CreateProcessInstance(ctx, &pb.CreateProcessInstanceRequest{BpmnProcessId: "nope", Version: -1, Variables: vars})
		wantCode(t, "variables "+vars, err, codes.InvalidArgument, "JSON object")
	}
	_, err = f.raw.CreateProcessInstance(ctx, &pb.CreateProcessInstanceRequest{})
	wantCode(t, "no process named", err, codes.InvalidArgument, "bpmnProcessId")
	_, err = f.raw.CreateProcessInstanceWithResult(ctx, &pb.CreateProcessInstanceWithResultRequest{})
	wantCode(t, "with result and no request", err, codes.InvalidArgument, "request")
	_, err = f.raw.DeployProcess(ctx, &pb.DeployProcessRequest{Processes: []*pb.ProcessRequestObject{{Name: "bad.bpmn", Definition: []byte("<nope/>")}}})
	wantCode(t, "malformed BPMN, the deprecated way", err, codes.InvalidArgument, "bad.bpmn")
	_, err = f.raw.DeployResource(ctx, &pb.DeployResourceRequest{})
	wantCode(t, "nothing to deploy", err, codes.InvalidArgument, "at least one resource")
	_, err = f.raw.PublishMessage(ctx, &pb.PublishMessageRequest{Name: "m", TimeToLive: -1})
	wantCode(t, "negative ttl", err, codes.InvalidArgument, "negative")
	_, err = f.raw.CreateProcessInstance(ctx, &pb.CreateProcessInstanceRequest{BpmnProcessId: "nope", StartInstructions: []*pb.ProcessInstanceCreationStartInstruction{{ElementId: "x"}}})
	wantCode(t, "start instructions", err, codes.Unimplemented, "start instructions")
	_, err = c.NewCancelInstanceCommand().ProcessInstanceKey(42).Send(ctx)
	wantCode(t, "a key of partition 0", err, codes.NotFound, "'42'")
	_, err = c.NewCancelInstanceCommand().ProcessInstanceKey(-7).Send(ctx)
	wantCode(t, "a negative key", err, codes.NotFound, "'-7'")
	_, err = c.NewDeployResourceCommand().AddResource([]byte("<nope/>"), "bad.bpmn").Send(ctx)
	wantCode(t, "malformed BPMN", err, codes.InvalidArgument, "bad.bpmn")
	_, err = c.NewDeployResourceCommand().AddResource([]byte("{}"), "decide.dmn").Send(ctx)
	wantCode(t, "a DMN file", err, codes.InvalidArgument, "decisions (DMN)")
	_, err = c.NewEvaluateDecisionCommand().DecisionId("d").Send(ctx)
	if s, _ := status.FromError(err); s.Code() != codes.Unimplemented {
		t.Errorf("evaluate decision: %v, want UNIMPLEMENTED", err)
	}
	if procs, err := f.eng.Processes(ctx); err != nil || len(procs) != 0 {
		t.Errorf("refused requests deployed %v (%v)", procs, err)
	}
}

func strKey(k int64) string { return strconv.FormatInt(k, 10) }

// bearer presents a bearer token, as a client configured with one does.
type bearer string

func (b bearer) ApplyCredentials(_ context.Context, h map[string]string) error {
	h["Authorization"] = "Bearer " + string(b)
	return nil
}

func (bearer) ShouldRetryRequest(context.Context, error) bool { return false }

// With --http-auth, a call needs credentials whose role allows its RPC.
func TestZeebeAuth(t *testing.T) {
	auth, err := httpauth.Parse("auth.yaml", []byte("tokens:\n"+
		"  - {name: ops, sha256: "+httpauth.HashToken("t-ops")+", roles: [operator]}\n"+
		"  - {name: bus, sha256: "+httpauth.HashToken("t-bus")+", roles: [integration]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, zeebegrpc.Authenticate(auth)...)
	ctx := ctxT(t)
	_, err = f.client.NewTopologyCommand().Send(ctx)
	wantCode(t, "no credentials", err, codes.Unauthenticated, "no credentials")
	_, err = f.dial(t, bearer("t-nope")).NewTopologyCommand().Send(ctx)
	wantCode(t, "an unknown token", err, codes.Unauthenticated, "unknown bearer token")
	ops := f.dial(t, bearer("t-ops"))
	if _, err := ops.NewTopologyCommand().Send(ctx); err != nil {
		t.Fatalf("operator topology: %v", err)
	}
	if _, err := ops.NewDeployResourceCommand().AddResource([]byte(ordersBPMN), "orders.bpmn").Send(ctx); err != nil {
		t.Fatalf("operator deploy: %v", err)
	}
	bus := f.dial(t, bearer("t-bus"))
	if _, err := bus.NewPublishMessageCommand().MessageName("paid").CorrelationKey("x").Send(ctx); err != nil {
		t.Fatalf("integration publish: %v", err)
	}
	_, err = bus.NewCreateInstanceCommand().BPMNProcessId("quick").LatestVersion().Send(ctx)
	wantCode(t, "integration starting", err, codes.PermissionDenied, "bus may not call CreateProcessInstance: it needs one of the roles operator")
}

// testdata reads a model of engine/camunda8/testdata, shared with /v2's
// tests.
func testdata(name string) string {
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}
