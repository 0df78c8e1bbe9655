package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8/rest"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

type fixture struct {
	env *streamstest.Env
	eng *engine.Engine
	url string // the API's base, …/v2
}

func setup(t *testing.T) *fixture {
	t.Helper()
	return setupWith(t, engine.Options{})
}

// setupWith serves /v2 over an engine opened with eo.
func setupWith(t *testing.T, eo engine.Options) *fixture {
	t.Helper()
	env := streamstest.Start(t)
	f := &fixture{env: env, eng: enginetest.Open(t, env.Conn, eo)}
	f.url = f.serve(t)
	return f
}

// serve serves a new handler over f's engine, as another engine node
// would, and returns its API's base URL.
func (f *fixture) serve(t *testing.T) string {
	t.Helper()
	return f.serveAuth(t, nil)
}

// serveAuth serves a new handler behind auth's authentication, as serve
// --http-auth does (none when auth is nil), and returns its base URL.
func (f *fixture) serveAuth(t *testing.T, auth *httpauth.Authenticator) string {
	t.Helper()
	h, err := rest.New(f.eng, f.env.Conn, rest.Options{Host: "127.0.0.1", Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	var api http.Handler = http.StripPrefix(rest.Prefix, h)
	if auth != nil {
		api = auth.Middleware(api, rest.Deny)
	}
	mux := http.NewServeMux()
	mux.Handle(rest.Prefix+"/", api)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return srv.URL + rest.Prefix
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call sends body (JSON; a string as it is) and decodes the answer into a
// map, which is nil for an empty one.
func (f *fixture) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return call(t, f.url, method, path, body)
}

func call(t *testing.T, base, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return callWith(t, base, "", method, path, body)
}

// callWith calls as call does, presenting a bearer token unless it is "".
func callWith(t *testing.T, base, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		doc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(doc)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if len(bytes.TrimSpace(raw)) == 0 {
		return res.StatusCode, nil
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not a JSON object", method, path, res.StatusCode, raw)
	}
	if res.StatusCode >= 400 && res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s %s: %d answered as %q, not a problem detail", method, path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res.StatusCode, out
}

// want fails unless the answer has status code, and for an error a
// problem detail with that status whose detail contains text.
func want(t *testing.T, what string, code int, out map[string]any, wantCode int, text string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("%s: %d %v, want %d", what, code, out, wantCode)
	}
	if code >= 400 {
		if out["status"] != float64(code) || out["title"] == "" || !strings.Contains(fmt.Sprint(out["detail"]), text) {
			t.Fatalf("%s: problem %v, want status %d and a detail with %q", what, out, code, text)
		}
	}
}

func testdata(t *testing.T, name string) []byte { return testdataF(t, name) }

// testdataF reads a model of engine/camunda8/testdata, shared with the
// Zeebe gateway's tests.
func testdataF(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deploy posts files as the multipart form the clients send.
func (f *fixture) deploy(t *testing.T, files map[string][]byte, fields map[string]string) (int, map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for name, b := range files {
		pw, err := mw.CreateFormFile("resources", name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = pw.Write(b)
	}
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	_ = mw.Close()
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, f.url+"/deployments", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, out
}

func (f *fixture) deployModels(t *testing.T) {
	t.Helper()
	code, out := f.deploy(t, map[string][]byte{"payment.bpmn": testdata(t, "payment.bpmn"), "orders.bpmn": testdata(t, "orders.bpmn")}, nil)
	want(t, "deploy", code, out, http.StatusOK, "")
}

// activate activates up to max jobs of type charge, waiting up to 5 s.
func (f *fixture) activate(t *testing.T, max int) []map[string]any {
	t.Helper()
	code, out := f.call(t, "POST", "/jobs/activation", map[string]any{"type": "charge", "worker": "w1", "timeout": 30000,
		"maxJobsToActivate": max, "requestTimeout": 5000})
	want(t, "activate", code, out, http.StatusOK, "")
	var jobs []map[string]any
	for _, j := range out["jobs"].([]any) {
		jobs = append(jobs, j.(map[string]any))
	}
	return jobs
}

// TestRESTStory walks the routes a Camunda 8 REST client uses: topology,
// deploy, start, a job worker, a message, an instance with result, an
// incident resolved, a cancellation.
func TestRESTStory(t *testing.T) {
	f := setup(t)
	code, topo := f.call(t, "GET", "/topology", nil)
	want(t, "topology", code, topo, http.StatusOK, "")
	if topo["partitionsCount"] != float64(f.eng.Partitions()) || topo["clusterId"] != nil || len(topo["brokers"].([]any)) != 1 {
		t.Errorf("topology %v", topo)
	}

	code, dep := f.deploy(t, map[string][]byte{"payment.bpmn": testdata(t, "payment.bpmn")}, map[string]string{"tenantId": "<default>"})
	want(t, "deploy", code, dep, http.StatusOK, "")
	ds := dep["deployments"].([]any)
	pd := ds[0].(map[string]any)["processDefinition"].(map[string]any)
	if len(ds) != 1 || pd["processDefinitionId"] != "payment" || pd["processDefinitionVersion"] != 1.0 || pd["resourceName"] != "payment.bpmn" ||
		dep["tenantId"] != "<default>" || ds[0].(map[string]any)["form"] != nil {
		t.Fatalf("deployment %v", dep)
	}
	defKey := pd["processDefinitionKey"].(string)

	// Started by definition key, the job completed with a result.
	code, inst := f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionKey": defKey, "variables": map[string]any{"amount": 10}})
	want(t, "create", code, inst, http.StatusOK, "")
	if inst["processDefinitionId"] != "payment" || inst["processDefinitionKey"] != defKey || inst["tenantId"] != "<default>" {
		t.Fatalf("created %v", inst)
	}
	ik := inst["processInstanceKey"].(string)
	jobs := f.activate(t, 5)
	if len(jobs) != 1 {
		t.Fatalf("activated %v", jobs)
	}
	j := jobs[0]
	if j["processInstanceKey"] != ik || j["elementId"] != "charge" || j["retries"] != 3.0 || j["variables"].(map[string]any)["amount"] != 10.0 ||
		j["customHeaders"].(map[string]any)["bank"] != "acme" || j["kind"] != "BPMN_ELEMENT" || j["deadline"].(float64) < float64(time.Now().UnixMilli()) {
		t.Fatalf("job %v", j)
	}
	code, out := f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", map[string]any{"variables": map[string]any{"result": "ok-10"}})
	want(t, "complete", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", nil)
	want(t, "complete again", code, out, http.StatusNotFound, "no such job")
	v, err := f.eng.Wait(ctxT(t), ik)
	if err != nil || v.Status != instance.Completed || v.Variables["receipt"] != "ok-10" {
		t.Fatalf("instance %+v %v", v, err)
	}
	code, got := f.call(t, "GET", "/process-instances/"+ik, nil)
	want(t, "get instance", code, got, http.StatusOK, "")
	if got["state"] != "COMPLETED" || got["endDate"] == nil || got["processDefinitionKey"] != defKey || got["hasIncident"] != false {
		t.Errorf("instance %v", got)
	}

	// A failure with retries 0 raises an incident; resolving it runs the job again.
	code, inst = f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "payment", "variables": map[string]any{"amount": 20}, "businessId": "order-20"})
	want(t, "create by id", code, inst, http.StatusOK, "")
	ik = inst["processInstanceKey"].(string)
	if inst["businessId"] != "order-20" {
		t.Errorf("created %v, want businessId order-20", inst)
	}
	j = f.activate(t, 1)[0]
	code, out = f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/failure", map[string]any{"retries": 0, "errorMessage": "bank gone"})
	want(t, "fail", code, out, http.StatusNoContent, "")
	if _, err := f.eng.WaitUntil(ctxT(t), ik, func(v *engine.InstanceView) bool { return len(v.Incidents) > 0 }); err != nil {
		t.Fatal(err)
	}
	var incs []any
	for deadline := time.Now().Add(10 * time.Second); len(incs) == 0; { // the record is written after the checkpoint
		if time.Now().After(deadline) {
			t.Fatal("no incident found by search within 10 s")
		}
		code, out = f.call(t, "POST", "/incidents/search", map[string]any{"filter": map[string]any{"processInstanceKey": ik, "state": "ACTIVE"}})
		want(t, "search incidents", code, out, http.StatusOK, "")
		incs = out["items"].([]any)
	}
	inc := incs[0].(map[string]any)
	if inc["errorType"] != "JOB_NO_RETRIES" || !strings.Contains(inc["errorMessage"].(string), "bank gone") || inc["elementId"] != "charge" ||
		inc["processInstanceKey"] != ik || inc["state"] != "ACTIVE" || out["page"].(map[string]any)["totalItems"] != 1.0 {
		t.Fatalf("incidents %v", out)
	}
	code, got = f.call(t, "GET", "/process-instances/"+ik, nil)
	if code != http.StatusOK || got["hasIncident"] != true || got["state"] != "ACTIVE" || got["businessId"] != "order-20" {
		t.Errorf("instance with incident %d %v", code, got)
	}
	nk := inc["incidentKey"].(string)
	code, out = f.call(t, "GET", "/incidents/"+nk, nil)
	if code != http.StatusOK || out["incidentKey"] != nk {
		t.Errorf("get incident %d %v", code, out)
	}
	code, out = f.call(t, "POST", "/incidents/"+nk+"/resolution", map[string]any{})
	want(t, "resolve", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "POST", "/incidents/"+nk+"/resolution", nil)
	want(t, "resolve again", code, out, http.StatusNotFound, "not open")
	j = f.activate(t, 1)[0]
	code, out = f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/error", map[string]any{"errorCode": "DECLINED", "variables": map[string]any{"why": "funds"}})
	want(t, "throw", code, out, http.StatusNoContent, "")
	if v, err := f.eng.Wait(ctxT(t), ik); err != nil || v.Variables["why"] != "funds" {
		t.Fatalf("declined instance %+v %v", v, err)
	}

	// A message, a signal, and an instance with result.
	f.deployModels(t)
	code, inst = f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "order", "variables": map[string]any{"orderId": "o-1", "amount": 4}})
	want(t, "create order", code, inst, http.StatusOK, "")
	oik := inst["processInstanceKey"].(string)
	code, out = f.call(t, "POST", "/messages/publication", map[string]any{"name": "paid", "correlationKey": "o-1", "timeToLive": 60000,
		"messageId": "m-1", "variables": map[string]any{"paidBy": "rest"}})
	want(t, "publish", code, out, http.StatusOK, "")
	if out["messageKey"] == "" || out["tenantId"] != "<default>" {
		t.Errorf("publication %v", out)
	}
	code, out = f.call(t, "POST", "/messages/publication", map[string]any{"name": "paid", "correlationKey": "o-1", "timeToLive": 60000, "messageId": "m-1"})
	want(t, "publish again", code, out, http.StatusConflict, "already published")
	if v, err := f.eng.Wait(ctxT(t), oik); err != nil || v.Variables["paidBy"] != "rest" || v.Variables["doubled"] == nil {
		t.Fatalf("order %+v %v", v, err)
	}
	code, out = f.call(t, "POST", "/messages/correlation", map[string]any{"name": "paid", "correlationKey": "nobody"})
	want(t, "correlate to none", code, out, http.StatusNotFound, "subscription")
	code, inst = f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "order", "variables": map[string]any{"orderId": "o-2"}})
	want(t, "create order 2", code, inst, http.StatusOK, "")
	if _, err := f.eng.WaitUntil(ctxT(t), inst["processInstanceKey"].(string), func(v *engine.InstanceView) bool { return len(v.ActiveNodes) > 0 && v.ActiveNodes[0] == "paid" }); err != nil {
		t.Fatal(err)
	}
	// The catch's subscription opens after the instance reached it: a
	// correlation before that finds nobody (404, nothing changed) and is
	// sent again, as a client would.
	testwait.True(t, 10*time.Second, "the message correlated to o-2", func() bool {
		code, out = f.call(t, "POST", "/messages/correlation", map[string]any{"name": "paid", "correlationKey": "o-2", "variables": map[string]any{"amount": 1}})
		if code != http.StatusNotFound {
			want(t, "correlate", code, out, http.StatusOK, "")
		}
		return code == http.StatusOK
	})
	if out["processInstanceKey"] != inst["processInstanceKey"] {
		t.Errorf("correlation %v, want instance %v", out, inst["processInstanceKey"])
	}
	code, inst = f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "hold"})
	want(t, "create hold", code, inst, http.StatusOK, "")
	hik := inst["processInstanceKey"].(string)
	if _, err := f.eng.WaitUntil(ctxT(t), hik, func(v *engine.InstanceView) bool { return len(v.ActiveNodes) > 0 }); err != nil {
		t.Fatal(err)
	}
	code, out = f.call(t, "POST", "/signals/broadcast", map[string]any{"signalName": "release"})
	want(t, "broadcast", code, out, http.StatusOK, "")
	if v, err := f.eng.Wait(ctxT(t), hik); err != nil || v.Status != instance.Completed {
		t.Fatalf("hold %+v %v", v, err)
	}
	code, out = f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "quick", "processDefinitionVersion": -1,
		"variables": map[string]any{"amount": 21, "other": 1}, "awaitCompletion": true, "fetchVariables": []string{"doubled"}})
	want(t, "with result", code, out, http.StatusOK, "")
	if vars := out["variables"].(map[string]any); len(vars) != 1 || vars["doubled"] != 42.0 {
		t.Errorf("result %v, want doubled 42 alone", out)
	}

	// Cancellation.
	code, inst = f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "hold"})
	want(t, "create hold 2", code, inst, http.StatusOK, "")
	hik = inst["processInstanceKey"].(string)
	code, out = f.call(t, "POST", "/process-instances/"+hik+"/cancellation", nil)
	want(t, "cancel", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "POST", "/process-instances/"+hik+"/cancellation", nil)
	want(t, "cancel again", code, out, http.StatusNotFound, "no active instance")
	code, got = f.call(t, "GET", "/process-instances/"+hik, nil)
	if code != http.StatusOK || got["state"] != "TERMINATED" {
		t.Errorf("cancelled instance %d %v", code, got)
	}
}

// A job activated through one node is reported through another (or after
// a restart): the key names the delivery, and the engine fences it.
func TestRESTReportThroughAnotherNode(t *testing.T) {
	f := setup(t)
	f.deployModels(t)
	other := f.serve(t)
	code, inst := f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "payment", "variables": map[string]any{"amount": 5}})
	want(t, "create", code, inst, http.StatusOK, "")
	j := f.activate(t, 1)[0]
	code, out := call(t, other, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", map[string]any{"variables": map[string]any{"result": "elsewhere"}})
	want(t, "complete through the other node", code, out, http.StatusNoContent, "")
	code, out = call(t, other, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", nil)
	want(t, "complete again", code, out, http.StatusNotFound, "no such job")
	if v, err := f.eng.Wait(ctxT(t), inst["processInstanceKey"].(string)); err != nil || v.Variables["receipt"] != "elsewhere" {
		t.Fatalf("instance %+v %v", v, err)
	}
}

// A job's timeout moved past its lock is held: another worker polling for
// three locks' worth finds nothing, and the first completes it.
func TestRESTJobTimeoutUpdate(t *testing.T) {
	f := setupWith(t, engine.Options{TopicJobs: map[string]jobs.Overrides{"charge": {LockDuration: time.Second}}})
	f.deployModels(t)
	code, inst := f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "payment", "variables": map[string]any{"amount": 7}})
	want(t, "create", code, inst, http.StatusOK, "")
	code, out := f.call(t, "POST", "/jobs/activation", map[string]any{"type": "charge", "timeout": 1000, "maxJobsToActivate": 1, "requestTimeout": 5000})
	want(t, "activate", code, out, http.StatusOK, "")
	j := out["jobs"].([]any)[0].(map[string]any)
	code, out = f.call(t, "PATCH", "/jobs/"+j["jobKey"].(string), map[string]any{"changeset": map[string]any{"timeout": 60000}})
	want(t, "update timeout", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "POST", "/jobs/activation", map[string]any{"type": "charge", "timeout": 1000, "maxJobsToActivate": 1, "requestTimeout": 3000})
	if want(t, "activate while held", code, out, http.StatusOK, ""); len(out["jobs"].([]any)) != 0 {
		t.Fatalf("another worker got %v while the lock was held", out)
	}
	code, out = f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", map[string]any{"variables": map[string]any{"result": "held"}})
	want(t, "complete", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "PATCH", "/jobs/"+j["jobKey"].(string), map[string]any{"changeset": map[string]any{"timeout": 60000}})
	want(t, "update a completed job", code, out, http.StatusNotFound, "no such job")
	if v, err := f.eng.Wait(ctxT(t), inst["processInstanceKey"].(string)); err != nil || v.Variables["receipt"] != "held" {
		t.Fatalf("instance %+v %v", v, err)
	}
}
