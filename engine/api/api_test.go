package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

var quietLog = enginetest.QuietLog

const header = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="defs">
`

// calcXML adds one to a (a Zeebe script task).
const calcXML = header + `<bpmn:process id="calc" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
  <bpmn:scriptTask id="t"><bpmn:extensionElements><zeebe:script expression="=a + 1" resultVariable="b"/></bpmn:extensionElements></bpmn:scriptTask>
  <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// greetXML sets r with a scriptFormat="feel" script task.
const greetXML = header + `<bpmn:process id="greet" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
  <bpmn:scriptTask id="t" scriptFormat="feel" camunda:resultVariable="r"><bpmn:script>"hello"</bpmn:script></bpmn:scriptTask>
  <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// waitXML parks on a one-hour timer.
const waitXML = header + `<bpmn:process id="wait" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="w"/>
  <bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f2" sourceRef="w" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// badXML has a business rule task, which jetbpm refuses.
const badXML = header + `<bpmn:process id="bad" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="u"/>
  <bpmn:businessRuleTask id="u"/>
  <bpmn:sequenceFlow id="f2" sourceRef="u" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// workerXML is a process id with one external task on topic "payments"
// holding its job for lock (an ISO-8601 duration).
func workerXML(id, lock string) string {
	return strings.ReplaceAll(header, `id="defs"`, `xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" id="defs"`) +
		`<bpmn:process id="` + id + `" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
  <bpmn:serviceTask id="t"><bpmn:extensionElements><jetbpm:worker topic="payments" lockDuration="` + lock + `"/></bpmn:extensionElements></bpmn:serviceTask>
  <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`
}

type fixture struct {
	env    *streamstest.Env
	eng    *engine.Engine
	srv    *api.Server
	client *api.Client
	nc     *nats.Conn // the client's connection
}

func setup(t *testing.T) *fixture {
	t.Helper()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, engine.Options{})
	srv, err := api.Serve(env.Conn, eng, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() }) // runs before the engine closes
	// Serve does not flush its subscription (see TestServeReadyWhenItReturns);
	// without this the first request could find no responder.
	if err := env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	nc := env.NewConn(t)
	return &fixture{env: env, eng: eng, srv: srv, client: api.NewClient(nc), nc: nc}
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (f *fixture) deploy(t *testing.T, files ...api.File) {
	t.Helper()
	if _, err := f.client.Deploy(ctxT(t), files...); err != nil {
		t.Fatalf("deploy: %v", err)
	}
}

func (f *fixture) start(t *testing.T, req api.StartRequest) string {
	t.Helper()
	id, err := f.client.Start(ctxT(t), req)
	if err != nil {
		t.Fatalf("start %s: %v", req.ProcessID, err)
	}
	return id
}

// waitParked waits until instance id sits on the timer w.
func (f *fixture) waitParked(t *testing.T, id string) {
	t.Helper()
	v, err := f.eng.WaitUntil(ctxT(t), id, func(v *engine.InstanceView) bool {
		return slices.Equal(v.ActiveNodes, []string{"w"})
	})
	if err != nil {
		t.Fatalf("instance %s never reached the timer: %+v, %v", id, v, err)
	}
}

// waitIncident waits until instance id has an open incident; it fails at
// once if the instance finishes instead.
func (f *fixture) waitIncident(t *testing.T, id string) *engine.InstanceView {
	t.Helper()
	v, err := f.eng.WaitUntil(ctxT(t), id, func(v *engine.InstanceView) bool {
		return v.Status == engine.StatusIncident || v.Status.Finished()
	})
	if err != nil || v.Status != engine.StatusIncident || len(v.Incidents) == 0 {
		t.Fatalf("instance %s: want an open incident, got %+v (%v)", id, v, err)
	}
	return v
}

func (f *fixture) waitDone(t *testing.T, id string) *engine.InstanceView {
	t.Helper()
	v, err := f.eng.Wait(ctxT(t), id)
	if err != nil {
		t.Fatalf("instance %s did not finish: %v", id, err)
	}
	return v
}

func TestDeploy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	deps, err := f.client.Deploy(ctx, api.File{Name: "calc.bpmn", XML: calcXML}, api.File{Name: "greet.bpmn", XML: greetXML})
	if err != nil {
		t.Fatal(err)
	}
	dep := ""
	if len(deps) > 0 {
		dep = deps[0].DeploymentID
	}
	want := []engine.Deployment{{ProcessID: "calc", Version: 1, New: true, DeploymentID: dep, Resource: "calc.bpmn"},
		{ProcessID: "greet", Version: 1, New: true, DeploymentID: dep, Resource: "greet.bpmn"}}
	if dep == "" || !reflect.DeepEqual(deps, want) {
		t.Fatalf("deploy = %+v, want %+v (one deployment id)", deps, want)
	}
	deps, err = f.client.Deploy(ctx, api.File{Name: "calc.bpmn", XML: calcXML})
	if err != nil || !reflect.DeepEqual(deps, []engine.Deployment{{ProcessID: "calc", Version: 1, New: false, DeploymentID: dep, Resource: "calc.bpmn"}}) {
		t.Fatalf("redeploy = %+v, %v; want calc version 1, not new", deps, err)
	}
	// A changed definition is a new version.
	deps, err = f.client.Deploy(ctx, api.File{Name: "calc.bpmn", XML: strings.Replace(calcXML, "=a + 1", "=a + 2", 1)})
	if err != nil || len(deps) != 1 || deps[0].Version != 2 || !deps[0].New || deps[0].DeploymentID == dep || deps[0].DeploymentID == "" {
		t.Fatalf("deploy of a changed definition = %+v, %v; want version 2", deps, err)
	}

	// The deployed processes run.
	id := f.start(t, api.StartRequest{ProcessID: "greet"})
	if v := f.waitDone(t, id); v.Status != instance.Completed || v.Variables["r"] != "hello" {
		t.Errorf("greet = %+v", v)
	}
	id = f.start(t, api.StartRequest{ProcessID: "calc", Version: 1, Vars: json.RawMessage(`{"a": 41}`)})
	if v := f.waitDone(t, id); v.Status != instance.Completed || v.Version != 1 || v.Variables["b"] != int64(42) {
		t.Errorf("calc v1 = %+v", v)
	}
}

func TestDeployAllOrNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	deps, err := f.client.Deploy(ctx,
		api.File{Name: "calc.bpmn", XML: calcXML},
		api.File{Name: "bad.bpmn", XML: badXML},
		api.File{Name: "wait.bpmn", XML: waitXML})
	if !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("deploy with a bad file = %+v, %v; want ErrInvalid", deps, err)
	}
	if len(deps) != 0 {
		t.Errorf("deployments reported with the error: %+v", deps)
	}
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != "invalid" || !strings.Contains(ae.Message, "bad.bpmn") || !strings.Contains(ae.Message, `"u"`) {
		t.Errorf("error %v should be code invalid naming the file and the element", err)
	}
	for _, p := range []string{"calc", "wait", "bad"} {
		if _, err := f.client.Start(ctx, api.StartRequest{ProcessID: p}); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("start %s after a failed deploy: %v, want ErrNotFound", p, err)
		}
	}

	// Every file imports, but together they cannot be deployed: the second
	// file's task wants another lock on the first file's topic. Nothing is
	// deployed, the first file's process included.
	_, err = f.client.Deploy(ctx,
		api.File{Name: "pay.bpmn", XML: workerXML("pay", "PT1M")},
		api.File{Name: "refund.bpmn", XML: workerXML("refund", "PT30S")})
	if !errors.As(err, &ae) || ae.Code != "invalid" || !strings.Contains(ae.Message, "per topic") {
		t.Fatalf("deploy with conflicting topic locks: %v; want code invalid", err)
	}
	for _, p := range []string{"pay", "refund"} {
		if _, err := f.client.Start(ctx, api.StartRequest{ProcessID: p}); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("start %s after a failed deploy: %v, want ErrNotFound", p, err)
		}
	}
	// One process id in two files.
	_, err = f.client.Deploy(ctx, api.File{Name: "a.bpmn", XML: calcXML}, api.File{Name: "b.bpmn", XML: calcXML})
	if !errors.As(err, &ae) || ae.Code != "invalid" || !strings.Contains(ae.Message, "a.bpmn") || !strings.Contains(ae.Message, "b.bpmn") {
		t.Errorf("deploy of one process in two files: %v; want code invalid naming both files", err)
	}

	for name, files := range map[string][]api.File{
		"no files":      nil,
		"malformed XML": {{Name: "x.bpmn", XML: "<bpmn:definitions"}},
		"empty XML":     {{Name: "x.bpmn"}},
	} {
		if _, err := f.client.Deploy(ctx, files...); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("deploy %s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestInstanceLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "calc.bpmn", XML: calcXML}, api.File{Name: "wait.bpmn", XML: waitXML})

	done := f.start(t, api.StartRequest{ProcessID: "calc", Vars: json.RawMessage(`{"a": 1, "tag": "x"}`)})
	f.waitDone(t, done)
	v, err := f.client.Instance(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	// Over JSON numbers arrive as float64.
	if v.ID != done || v.ProcessID != "calc" || v.Version != 1 || v.Status != instance.Completed ||
		v.Variables["b"] != float64(2) || v.Variables["tag"] != "x" || v.EndedAt == nil || len(v.ActiveNodes) != 0 {
		t.Errorf("completed view = %+v", v)
	}

	parked := f.start(t, api.StartRequest{ProcessID: "wait", ID: "order-1"})
	if parked != "order-1" {
		t.Fatalf("start with id order-1 returned %q", parked)
	}
	f.waitParked(t, parked)
	v, err = f.client.Instance(ctx, parked)
	if err != nil || v.Status != instance.Active || !slices.Equal(v.ActiveNodes, []string{"w"}) || v.EndedAt != nil {
		t.Fatalf("parked view = %+v, %v", v, err)
	}

	listIDs := func(req api.ListRequest) []string {
		t.Helper()
		list, err := f.client.Instances(ctx, req)
		if err != nil {
			t.Fatalf("list %+v: %v", req, err)
		}
		var ids []string
		for _, v := range list {
			ids = append(ids, v.ID)
		}
		slices.Sort(ids)
		return ids
	}
	for _, c := range []struct {
		req  api.ListRequest
		want []string
	}{
		{api.ListRequest{}, []string{done, parked}},
		{api.ListRequest{ProcessID: "wait"}, []string{parked}},
		{api.ListRequest{ProcessID: "calc"}, []string{done}},
		{api.ListRequest{Status: "active"}, []string{parked}},
		{api.ListRequest{Status: "completed"}, []string{done}},
		{api.ListRequest{ProcessID: "calc", Status: "active"}, nil},
		{api.ListRequest{ProcessID: "nope"}, nil},
	} {
		want := slices.Clone(c.want)
		slices.Sort(want)
		if got := listIDs(c.req); !slices.Equal(got, want) {
			t.Errorf("list %+v = %v, want %v", c.req, got, want)
		}
	}
	if list, err := f.client.Instances(ctx, api.ListRequest{Limit: 1}); err != nil || len(list) != 1 {
		t.Errorf("list with limit 1 = %d instances, %v", len(list), err)
	}

	v, err = f.client.Cancel(ctx, parked, "test")
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != parked || v.Status != instance.Terminated || v.EndedAt == nil || len(v.ActiveNodes) != 0 {
		t.Errorf("cancelled view = %+v", v)
	}
	if got := listIDs(api.ListRequest{Status: "terminated"}); !slices.Equal(got, []string{parked}) {
		t.Errorf("terminated instances = %v", got)
	}
	_, err = f.client.Cancel(ctx, parked, "again")
	if !errors.Is(err, engine.ErrFinished) {
		t.Errorf("second cancel: %v, want ErrFinished", err)
	}
	if errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrInvalid) {
		t.Errorf("second cancel %v matches other sentinels", err)
	}
	if _, err := f.client.Cancel(ctx, done, ""); !errors.Is(err, engine.ErrFinished) {
		t.Errorf("cancel of a completed instance: %v, want ErrFinished", err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "calc.bpmn", XML: calcXML})

	for _, id := range []string{"nope", "a.b", "*", ""} {
		if _, err := f.client.Instance(ctx, id); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("Instance(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := f.client.Cancel(ctx, id, ""); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("Cancel(%q): %v, want ErrNotFound", id, err)
		}
	}
	// Filters with values that exist nowhere are refused, not answered with
	// an empty list.
	for _, req := range []api.ListRequest{{Status: "running"}, {Status: "Active"}, {Limit: -1}} {
		if _, err := f.client.Instances(ctx, req); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("list %+v: %v, want ErrInvalid", req, err)
		}
	}
	for _, req := range []api.IncidentListRequest{{Cause: "timeout"}, {State: "done"}, {OlderThan: "soon"}} {
		if _, err := f.client.Incidents(ctx, req); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("incident list %+v: %v, want ErrInvalid", req, err)
		}
	}
	if _, err := f.client.Start(ctx, api.StartRequest{ProcessID: "missing"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("start of an unknown process: %v, want ErrNotFound", err)
	}
	if _, err := f.client.Start(ctx, api.StartRequest{ProcessID: "calc", Version: 7}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("start of an unknown version: %v, want ErrNotFound", err)
	}
	for _, vars := range []string{`[1]`, `"x"`, `3`, `true`} {
		if _, err := f.client.Start(ctx, api.StartRequest{ProcessID: "calc", Vars: json.RawMessage(vars)}); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("start with vars %s: %v, want ErrInvalid", vars, err)
		}
	}
	for _, id := range []string{"a.b", "a b", "a*", "a>", strings.Repeat("x", 129)} {
		if _, err := f.client.Start(ctx, api.StartRequest{ProcessID: "calc", ID: id}); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("start with id %q: %v, want ErrInvalid", id, err)
		}
	}
	big, _ := json.Marshal(map[string]any{"a": 1, "big": strings.Repeat("x", 300<<10)})
	_, err := f.client.Start(ctx, api.StartRequest{ProcessID: "calc", Vars: big})
	if !errors.Is(err, engine.ErrTooLarge) {
		t.Errorf("start with a 300 KiB variable: %v, want ErrTooLarge", err)
	}
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != "too_large" || !strings.Contains(ae.Message, `"big"`) {
		t.Errorf("too large error = %#v", err)
	}
	// null vars are no vars: the script's nil arithmetic raises an
	// expression incident on t, and the instance stays alive.
	id := f.start(t, api.StartRequest{ProcessID: "calc", Vars: json.RawMessage(`null`)})
	v := f.waitIncident(t, id)
	if len(v.Incidents) != 1 || v.Incidents[0].Node != "t" || v.Incidents[0].CauseClass != "expression" ||
		v.Failure != nil || !slices.Equal(v.ActiveNodes, []string{"t"}) {
		t.Errorf("calc without a: %+v, want an expression incident on t (nil arithmetic)", v)
	}
}

// rawReply sends body to the API subject of op and decodes the envelope.
func rawReply(t *testing.T, nc *nats.Conn, op string, body []byte) (result json.RawMessage, e *api.Error) {
	t.Helper()
	msg, err := nc.Request(streams.APISubject(op), body, 10*time.Second)
	if err != nil {
		t.Fatalf("%s %q: no reply: %v", op, body, err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *api.Error      `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		t.Fatalf("%s: reply %q is not JSON: %v", op, msg.Data, err)
	}
	if (r.Error == nil) == (r.Result == nil) {
		t.Errorf("%s: reply %s has both or neither of result and error", op, msg.Data)
	}
	return r.Result, r.Error
}

func TestRawRequests(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.deploy(t, api.File{Name: "wait.bpmn", XML: waitXML})
	for _, op := range []string{api.OpDeploy, api.OpStart, api.OpInstanceGet, api.OpInstanceList, api.OpInstanceCancel, api.OpInstanceCompensate} {
		for _, body := range []string{"{not json", "", "[]", `{"files": 1, "processId": 5, "id": 5, "limit": "x"}`, "\x00\xff"} {
			_, e := rawReply(t, f.nc, op, []byte(body))
			if e == nil || e.Code != "invalid" {
				t.Errorf("%s with body %q: error %+v, want code invalid", op, body, e)
			}
		}
	}
	for _, op := range []string{"bogus", "start.extra", "instance"} {
		_, e := rawReply(t, f.nc, op, []byte("{}"))
		if e == nil || e.Code != "invalid" || !strings.Contains(e.Message, op) {
			t.Errorf("unknown operation %q: error %+v, want code invalid naming it", op, e)
		}
	}
	// A request without a reply subject is served and dropped, and the
	// server keeps answering.
	if err := f.nc.Publish(streams.APISubject(api.OpStart), []byte(`{"processId":"wait","id":"fire-and-forget"}`)); err != nil {
		t.Fatal(err)
	}
	res, e := rawReply(t, f.nc, api.OpStart, []byte(`{"processId":"wait","id":"raw-1"}`))
	if e != nil || string(res) != `{"id":"raw-1"}` {
		t.Errorf("raw start = %s, %+v", res, e)
	}
	res, e = rawReply(t, f.nc, api.OpInstanceList, []byte(`{"processId":"none"}`))
	if e != nil || string(res) != `{"instances":[]}` {
		t.Errorf("empty list = %s, %+v; want an empty array, not null", res, e)
	}
}

func TestNoEngine(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "calc.bpmn", XML: calcXML})
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	// Make sure the server has seen the unsubscribe before asking again
	// (a different connection's request could otherwise overtake it).
	if err := f.env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Start(ctx, api.StartRequest{ProcessID: "calc"}); !errors.Is(err, api.ErrNoEngine) {
		t.Errorf("start with no server: %v, want ErrNoEngine", err)
	}
	if _, err := f.client.Instances(ctx, api.ListRequest{}); !errors.Is(err, api.ErrNoEngine) {
		t.Errorf("list with no server: %v, want ErrNoEngine", err)
	}

	// A client whose context expires gets a context error, not ErrNoEngine.
	srv, err := api.Serve(f.env.Conn, f.eng, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := f.env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Deploy(ctx, api.File{Name: "calc.bpmn", XML: calcXML}); err != nil {
		t.Errorf("deploy with a new server: %v", err)
	}
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.client.Instances(dead, api.ListRequest{}); !errors.Is(err, context.Canceled) {
		t.Errorf("list with a cancelled context: %v", err)
	}
}

// Close returns once the requests in flight have been answered: a cancel
// that cannot finish (no engine applies events any more) is interrupted
// and answered, not left to time out.
func TestCloseAnswersInFlight(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "wait.bpmn", XML: waitXML})
	id := f.start(t, api.StartRequest{ProcessID: "wait"})
	f.waitParked(t, id)
	// Stop the engine's partitions: the cancel event will not be applied.
	if err := f.eng.Close(ctx); err != nil {
		t.Fatal(err)
	}

	got := make(chan result, 1)
	go func() {
		v, err := f.client.Cancel(ctx, id, "stuck")
		got <- result{v, err}
	}()

	// The request is in flight once its cancel event is in the stream.
	if r, returned := waitCancelEvent(t, f.env, id, got); returned {
		t.Fatalf("cancel returned before Close: %+v, %v", r.v, r.err)
	}

	closed := make(chan error, 1)
	go func() { closed <- f.srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	select {
	case r := <-got:
		var ae *api.Error
		if r.err == nil || !errors.As(r.err, &ae) {
			t.Errorf("in-flight cancel = %+v, %v; want an error reply from the server", r.v, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight cancel got no reply")
	}
	if err := f.env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Instance(ctx, id); !errors.Is(err, api.ErrNoEngine) {
		t.Errorf("request after Close: %v, want ErrNoEngine", err)
	}
}

type result struct {
	v   *engine.InstanceView
	err error
}

// waitCancelEvent waits until the cancel event of instance id is in the
// events stream, or the call reporting to got returns first (returned).
func waitCancelEvent(t *testing.T, env *streamstest.Env, id string, got chan result) (r result, returned bool) {
	t.Helper()
	ctx := ctxT(t)
	subject := streams.EventSubject(streams.PartitionOf(id, env.Layout.Partitions), id)
	events, err := env.JS.Stream(ctx, streams.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 15*time.Second, "the cancel event or the call's return", func() error {
		m, err := events.GetLastMsgForSubject(ctx, subject)
		if err == nil && m.Header.Get(jetstream.MsgIDHeader) == "cancel:"+id {
			return nil
		}
		select {
		case r, returned = <-got:
			return nil
		default:
			return fmt.Errorf("no cancel event (%v)", err)
		}
	})
	return r, returned
}

// Start is durable when it returns, so a cancel sent right after it must
// cancel the instance even if no engine has applied the start yet; today
// it answers not_found (Engine.Cancel reads only the checkpoint). Engine
// A's partitions are stopped so the start stays pending deterministically;
// engine B then applies the start and the cancel.
func TestCancelRightAfterStart(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := ctxT(t)
	// Queued starts: a closed engine still stores them (a direct start
	// needs the engine's partition loop, and a closed engine refuses it).
	engA, err := engine.Open(ctx, env.Conn, engine.Options{Logger: quietLog, QueuedStarts: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.Serve(env.Conn, engA, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if err := env.Conn.Flush(); err != nil { // see TestServeReadyWhenItReturns
		t.Fatal(err)
	}
	client := api.NewClient(env.NewConn(t))
	if _, err := client.Deploy(ctx, api.File{Name: "wait.bpmn", XML: waitXML}); err != nil {
		t.Fatal(err)
	}
	if err := engA.Close(ctx); err != nil { // A stops applying events
		t.Fatal(err)
	}
	id, err := client.Start(ctx, api.StartRequest{ProcessID: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan result, 1)
	go func() {
		v, err := client.Cancel(ctx, id, "changed my mind")
		got <- result{v, err}
	}()
	r, returned := waitCancelEvent(t, env, id, got)
	if returned {
		t.Fatalf("cancel of a started instance whose start is not applied yet = %+v, %v; want it cancelled", r.v, r.err)
	}
	engB, err := engine.Open(ctx, env.NewConn(t), engine.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = engB.Close(ctx)
	})
	select {
	case r = <-got:
	case <-ctx.Done():
		t.Fatal("cancel never returned")
	}
	if r.err != nil || r.v.Status != instance.Terminated {
		t.Errorf("cancel = %+v, %v; want terminated", r.v, r.err)
	}
}

// When Serve returns, the subscription must be known to the server, so a
// request from another connection is answered. Today Serve does not flush
// its SUB, and such a request usually gets ErrNoEngine.
func TestServeReadyWhenItReturns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		nc := f.env.NewConn(t)
		srv, err := api.Serve(nc, f.eng, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.client.Instances(ctxT(t), api.ListRequest{ProcessID: "none"})
		_ = srv.Close()
		_ = nc.Flush()
		if err != nil {
			t.Fatalf("request %d right after Serve returned: %v, want an answer", i, err)
		}
	}
}

// After Close returns, a request gets ErrNoEngine at once. Today Close
// unsubscribes without flushing: a request that reaches the server before
// the UNSUB is routed to the dead subscription, dropped unanswered, and
// the client waits for its whole timeout (30 s by default).
func TestRequestAfterCloseGetsNoEngine(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		nc := f.env.NewConn(t)
		srv, err := api.Serve(nc, f.eng, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = f.client.Instances(ctx, api.ListRequest{ProcessID: "none"})
		cancel()
		if !errors.Is(err, api.ErrNoEngine) {
			t.Fatalf("request %d after Close returned: %v, want ErrNoEngine", i, err)
		}
	}
}
