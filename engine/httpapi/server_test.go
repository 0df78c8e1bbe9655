package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/httpapi"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

const header = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="defs">
`

// calcXML adds one to a: without a, an expression incident.
const calcXML = header + `<bpmn:process id="calc" name="Calc" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
  <bpmn:scriptTask id="t"><bpmn:extensionElements><zeebe:script expression="=a + 1" resultVariable="b"/></bpmn:extensionElements></bpmn:scriptTask>
  <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// waitXML parks on a message paid, correlated by orderId, and on a
// one-hour timer beside it.
const waitXML = header + `<bpmn:message id="m" name="paid"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId"/></bpmn:extensionElements></bpmn:message>
<bpmn:process id="wait" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="w"/>
  <bpmn:intermediateCatchEvent id="w"><bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f2" sourceRef="w" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// reviewXML is a user task for group accounting.
const reviewXML = header + `<bpmn:process id="review" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
  <bpmn:userTask id="approve" name="Approve" camunda:candidateGroups="accounting"/>
  <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// fixture is an httpapi server over a real engine on a real NATS.
type fixture struct {
	t   *testing.T
	srv *httpapi.Server
	url string
	// auth is sent with every request, unless a call sets its own.
	auth string
}

func setup(t *testing.T, auth *httpauth.Authenticator, opts ...httpapi.Option) *fixture {
	t.Helper()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, engine.Options{Logger: enginetest.QuietLog})
	srv := httpapi.New(auth, append([]httpapi.Option{httpapi.WithLogger(enginetest.QuietLog)}, opts...)...)
	srv.SetEngine(eng)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &fixture{t: t, srv: srv, url: hs.URL}
}

// response is an answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v: %s", r.status, err, r.body)
	}
	return m
}

func (f *fixture) do(method, path, contentType string, body io.Reader, hdr ...string) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if f.auth != "" {
		req.Header.Set("Authorization", f.auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

func (f *fixture) get(path string) response { f.t.Helper(); return f.do("GET", path, "", nil) }

func (f *fixture) post(path, body string) response {
	f.t.Helper()
	return f.do("POST", path, "application/json", strings.NewReader(body))
}

// ok wants status and returns the JSON object answered.
func (f *fixture) ok(r response, status int) map[string]any {
	f.t.Helper()
	if r.status != status || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		f.t.Fatalf("answer %d (%s): %s; want %d application/json", r.status, r.header.Get("Content-Type"), r.body, status)
	}
	return r.json(f.t)
}

// problem wants a problem of status and type (after urn:jetbpm:problem:)
// whose detail contains detail.
func (f *fixture) problem(r response, status int, typ, detail string) map[string]any {
	f.t.Helper()
	if r.status != status || r.header.Get("Content-Type") != "application/problem+json" {
		f.t.Fatalf("answer %d (%s): %s; want a %d problem", r.status, r.header.Get("Content-Type"), r.body, status)
	}
	p := r.json(f.t)
	if p["type"] != "urn:jetbpm:problem:"+typ || p["status"] != float64(status) || !strings.Contains(fmt.Sprint(p["detail"]), detail) || p["title"] == "" {
		f.t.Fatalf("problem %v; want type %s, status %d, a detail containing %q", p, typ, status, detail)
	}
	return p
}

func (f *fixture) deploy(files ...string) {
	f.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(files); i += 2 {
		w, err := mw.CreateFormFile("file", files[i])
		if err != nil {
			f.t.Fatal(err)
		}
		io.WriteString(w, files[i+1])
	}
	mw.Close()
	f.ok(f.do("POST", "/v1/deployments", mw.FormDataContentType(), &buf), 200)
}

// waitFor polls path until cond holds on its JSON answer.
func (f *fixture) waitFor(path, what string, cond func(map[string]any) bool) map[string]any {
	f.t.Helper()
	var last map[string]any
	testwait.Until(f.t, 20*time.Second, what, func() error {
		r := f.get(path)
		if r.status != 200 {
			return fmt.Errorf("%d: %s", r.status, r.body)
		}
		last = r.json(f.t)
		if !cond(last) {
			return fmt.Errorf("not yet: %s", r.body)
		}
		return nil
	})
	return last
}

func TestDeployAndProcesses(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)

	// multipart, two files; a form field without a file name is skipped.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("deployment-name", "camunda-modeler")
	for name, xml := range map[string]string{"calc.bpmn": calcXML, "wait.bpmn": waitXML} {
		w, _ := mw.CreateFormFile("data", name)
		io.WriteString(w, xml)
	}
	mw.Close()
	res := f.ok(f.do("POST", "/v1/deployments", mw.FormDataContentType(), &buf), 200)
	if deps, _ := res["deployments"].([]any); len(deps) != 2 {
		t.Fatalf("deploy answered %v", res)
	}
	// raw XML body, named by ?name=
	res = f.ok(f.do("POST", "/v1/deployments?name=review.bpmn", "application/xml", strings.NewReader(reviewXML)), 200)
	deps, _ := res["deployments"].([]any)
	first, _ := deps[0].(map[string]any)
	deployID, _ := first["deploymentId"].(string)
	if len(deps) != 1 || deployID == "" || fmt.Sprint(res["deployments"]) != "[map[deploymentId:"+deployID+" new:true processId:review resource:review.bpmn version:1]]" {
		t.Fatalf("raw deploy answered %v", res)
	}
	// JSON, the engine API's request: the same document again is no new
	// version, still of the first deploy and file.
	body, _ := json.Marshal(map[string]any{"files": []any{map[string]string{"name": "r.bpmn", "xml": reviewXML}}})
	res = f.ok(f.post("/v1/deployments", string(body)), 200)
	if fmt.Sprint(res["deployments"]) != "[map[deploymentId:"+deployID+" new:false processId:review resource:review.bpmn version:1]]" {
		t.Fatalf("JSON deploy answered %v", res)
	}

	f.problem(f.do("POST", "/v1/deployments?name=bad.bpmn", "application/xml", strings.NewReader("<nope")), 422, "unprocessable", "bad.bpmn")
	f.problem(f.do("POST", "/v1/deployments", "application/xml", nil), 422, "unprocessable", "")
	f.problem(f.post("/v1/deployments", `{"files": [{"name": "x", "xml": 1}]}`), 400, "bad-request", "files.xml")
	f.problem(f.post("/v1/deployments", `{"files": [], "extra": 1}`), 400, "bad-request", `unknown field "extra"`)
	f.problem(f.post("/v1/deployments", `{"files": [`), 400, "bad-request", "ends early")
	f.problem(f.post("/v1/deployments", `{}`), 400, "bad-request", "no BPMN documents")
	f.problem(f.do("POST", "/v1/deployments?version=2", "application/xml", strings.NewReader(calcXML)), 400, "bad-request", `"version"`)

	list := f.ok(f.get("/v1/processes"), 200)
	procs, _ := list["processes"].([]any)
	if len(procs) != 3 {
		t.Fatalf("processes: %v", list)
	}
	first, _ = procs[0].(map[string]any)
	if first["id"] != "calc" || first["name"] != "Calc" || first["version"] != float64(1) || first["hasSource"] != true || first["deployedAt"] == "" {
		t.Errorf("processes[0] = %v", first)
	}
	p := f.ok(f.get("/v1/processes/calc?version=1"), 200)
	if p["id"] != "calc" || p["xml"] != nil {
		t.Errorf("process calc = %v", p)
	}
	p = f.ok(f.get("/v1/processes/calc?xml=true"), 200)
	if p["xml"] != calcXML {
		t.Errorf("process calc ?xml=true: xml %v", p["xml"])
	}
	r := f.get("/v1/processes/calc/xml")
	if r.status != 200 || r.header.Get("Content-Type") != "application/xml; charset=utf-8" || string(r.body) != calcXML {
		t.Errorf("process xml: %d %s %q", r.status, r.header.Get("Content-Type"), r.body)
	}
	f.problem(f.get("/v1/processes/nosuch"), 404, "not-found", `process "nosuch"`)
	f.problem(f.get("/v1/processes/calc?version=9"), 404, "not-found", "version 9")
	f.problem(f.get("/v1/processes/calc/xml?version=9"), 404, "not-found", "version 9")
	f.problem(f.get("/v1/processes/calc?version=two"), 400, "bad-request", `version: "two" is not an integer`)
	f.problem(f.get("/v1/processes/calc?bogus=1"), 400, "bad-request", `unknown query parameter "bogus"; want one of version, xml`)
	f.problem(f.get("/v1/processes/calc?version=1&version=2"), 400, "bad-request", "given 2 times")
	f.problem(f.get("/v1/processes?x=1"), 400, "bad-request", "takes none")
}

func TestInstances(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("calc.bpmn", calcXML, "wait.bpmn", waitXML)

	r := f.post("/v1/processes/calc/instances", `{"id": "c-1", "vars": {"a": 41}, "businessKey": "bk"}`)
	if got := f.ok(r, 201); got["id"] != "c-1" || r.header.Get("Location") != "/v1/instances/c-1" {
		t.Fatalf("start answered %v, Location %q", got, r.header.Get("Location"))
	}
	v := f.waitFor("/v1/instances/c-1", "c-1 to complete", func(v map[string]any) bool { return v["status"] == "completed" })
	if vars, _ := v["variables"].(map[string]any); vars["b"] != float64(42) || v["processId"] != "calc" {
		t.Errorf("instance c-1 = %v", v)
	}
	// An empty body starts with no variables.
	f.ok(f.do("POST", "/v1/processes/wait/instances", "", nil), 201)
	f.ok(f.post("/v1/processes/wait/instances", `{"id": "w-1", "vars": {"orderId": "o-1"}}`), 201)

	f.problem(f.post("/v1/processes/nosuch/instances", `{}`), 404, "not-found", "nosuch")
	f.problem(f.post("/v1/processes/calc/instances", `{"processId": "wait"}`), 400, "bad-request", "field processId: the path gives it")
	f.problem(f.post("/v1/processes/calc/instances", `{"vars": {"a": 1}, "colour": "red"}`), 400, "bad-request", `unknown field "colour"; want one of version, id, vars, businessKey`)
	f.problem(f.post("/v1/processes/calc/instances", `{"version": "1"}`), 400, "bad-request", "field version: want an integer, found a JSON string")
	f.problem(f.post("/v1/processes/calc/instances", `[1]`), 400, "bad-request", "not a JSON object")
	f.problem(f.post("/v1/processes/calc/instances", `null`), 400, "bad-request", "null")
	f.problem(f.post("/v1/processes/calc/instances", `{} {}`), 400, "bad-request", "more than one JSON value")
	f.problem(f.post("/v1/processes/calc/instances", `{"id": "a b"}`), 422, "unprocessable", "")
	f.problem(f.post("/v1/processes/calc/instances", `{"vars": [1]}`), 422, "unprocessable", "")
	f.problem(f.post("/v1/processes/calc/instances?id=x", `{}`), 400, "bad-request", "JSON body, not the query string")
	f.problem(f.do("PUT", "/v1/processes/calc/instances", "", nil), 405, "method-not-allowed", "takes POST")

	f.waitFor("/v1/instances?processId=wait&status=active", "two instances of wait", func(m map[string]any) bool {
		insts, _ := m["instances"].([]any)
		return len(insts) == 2
	})
	list := f.ok(f.get("/v1/instances?limit=1"), 200)
	if insts, _ := list["instances"].([]any); len(insts) != 1 {
		t.Errorf("instances limit 1: %v", list)
	}
	f.problem(f.get("/v1/instances?status=sleepy"), 422, "unprocessable", "status")
	f.problem(f.get("/v1/instances?limit=x"), 400, "bad-request", "limit")
	f.problem(f.get("/v1/instances/nosuch"), 404, "not-found", "nosuch")

	f.waitFor("/v1/instances/w-1", "w-1 to wait", func(v map[string]any) bool { return fmt.Sprint(v["activeNodes"]) == "[w]" })
	c := f.ok(f.post("/v1/instances/w-1/cancel", `{"reason": "test"}`), 200)
	if c["status"] != "terminated" {
		t.Errorf("cancel answered %v", c)
	}
	f.problem(f.post("/v1/instances/w-1/cancel", `{}`), 409, "finished", "")
	f.problem(f.post("/v1/instances/nosuch/cancel", `{}`), 404, "not-found", "")
}

func TestIncidents(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("calc.bpmn", calcXML)
	for _, id := range []string{"i-retry", "i-resolve", "i-abandon"} {
		f.ok(f.post("/v1/processes/calc/instances", `{"id": "`+id+`"}`), 201)
	}
	ids := map[string]string{}
	f.waitFor("/v1/incidents?state=open&process=calc", "three open incidents", func(m map[string]any) bool {
		list, _ := m["incidents"].([]any)
		for _, x := range list {
			rec, _ := x.(map[string]any)
			id, _ := rec["id"].(string)
			inst, _, _ := strings.Cut(id, "/")
			ids[inst] = id
		}
		return len(list) == 3
	})
	// Pages: limit, then the next cursor; total counts every match.
	first := f.ok(f.get("/v1/incidents?state=open&process=calc&limit=2"), 200)
	next, _ := first["next"].(string)
	if l, _ := first["incidents"].([]any); len(l) != 2 || first["total"] != float64(3) || next == "" || first["prev"] != nil {
		t.Fatalf("first page = %v", first)
	}
	second := f.ok(f.get("/v1/incidents?state=open&process=calc&limit=2&after="+url.QueryEscape(next)), 200)
	l2, _ := second["incidents"].([]any)
	if len(l2) != 1 || second["total"] != float64(3) || second["next"] != nil || second["prev"] == nil {
		t.Fatalf("second page = %v", second)
	}
	seen := map[string]bool{}
	for _, x := range append(first["incidents"].([]any), l2...) {
		seen[x.(map[string]any)["id"].(string)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("the two pages hold %v, want the three incidents once each", seen)
	}
	f.problem(f.get("/v1/incidents?after=zz%21"), 422, "unprocessable", "cursor")
	f.problem(f.get("/v1/incidents?limit=-1"), 422, "unprocessable", "limit")
	f.problem(f.get("/v1/incidents?after="+url.QueryEscape(next)+"&before="+url.QueryEscape(next)), 422, "unprocessable", "one cursor")

	esc := func(id string) string { return url.PathEscape(ids[id]) }
	inc := f.ok(f.get("/v1/incidents/"+esc("i-retry")), 200)
	if inc["id"] != ids["i-retry"] || inc["state"] != "open" {
		t.Fatalf("incident = %v", inc)
	}
	f.ok(f.post("/v1/incidents/"+esc("i-retry")+"/retry", ""), 200)
	res := f.ok(f.post("/v1/incidents/"+esc("i-resolve")+"/resolve", `{"vars": {"b": 7}}`), 200)
	if res["id"] != ids["i-resolve"] {
		t.Errorf("resolve answered %v", res)
	}
	f.ok(f.post("/v1/incidents/"+esc("i-abandon")+"/abandon", `{}`), 200)
	v := f.waitFor("/v1/instances/i-resolve", "i-resolve to complete", func(v map[string]any) bool { return v["status"] == "completed" })
	if vars, _ := v["variables"].(map[string]any); vars["b"] != float64(7) {
		t.Errorf("resolved instance = %v", v)
	}
	f.waitFor("/v1/instances/i-abandon", "i-abandon to end", func(v map[string]any) bool { return v["status"] == "terminated" })

	f.problem(f.post("/v1/incidents/"+esc("i-abandon")+"/retry", `{}`), 409, "finished", "")
	f.problem(f.post("/v1/incidents/"+esc("i-resolve")+"/resolve", `{"vars": [1]}`), 400, "bad-request", "field vars: want an object")
	f.problem(f.post("/v1/incidents/"+esc("i-retry")+"/retry", `{"vars": {}}`), 400, "bad-request", `unknown field "vars"; want none`)
	f.problem(f.get("/v1/incidents/nosuch%2Fx%2F1"), 404, "not-found", "")
	f.problem(f.get("/v1/incidents?state=shut"), 422, "unprocessable", "state")
	f.problem(f.get("/v1/incidents?olderThan=-1d"), 422, "unprocessable", "olderThan")
}

func TestMessagesAndSignals(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("wait.bpmn", waitXML)
	f.ok(f.post("/v1/processes/wait/instances", `{"id": "w-1", "vars": {"orderId": "o-1"}}`), 201)
	f.waitFor("/v1/instances/w-1", "w-1 to wait", func(v map[string]any) bool { return fmt.Sprint(v["activeNodes"]) == "[w]" })

	f.problem(f.post("/v1/messages/correlate", `{"name": "paid", "key": "o-2"}`), 404, "no-subscription", "")
	var got map[string]any
	testwait.Until(t, 20*time.Second, "the message to reach w-1", func() error {
		r := f.post("/v1/messages/correlate", `{"name": "paid", "key": "o-1", "vars": {"amount": 3}}`)
		if r.status != 200 {
			return fmt.Errorf("%d %s", r.status, r.body)
		}
		got = r.json(t)
		return nil
	})
	if got["instanceId"] != "w-1" {
		t.Errorf("correlate answered %v", got)
	}
	pub := f.ok(f.post("/v1/messages", `{"name": "paid", "key": "o-9", "ttl": "1h", "id": "m-1"}`), 200)
	if pub["id"] != "m-1" {
		t.Errorf("publish answered %v", pub)
	}
	f.problem(f.post("/v1/messages", `{"name": "paid", "key": "o-9", "ttl": "1h", "id": "m-1"}`), 409, "duplicate", "")
	f.problem(f.post("/v1/messages", `{"name": "paid", "ttl": "soon"}`), 422, "unprocessable", "ttl")
	f.problem(f.post("/v1/messages", `{"name": 5}`), 400, "bad-request", "field name: want a string")

	sig := f.ok(f.post("/v1/signals", `{"name": "nobody-listens", "id": "s-1"}`), 200)
	if sig["id"] != "s-1" {
		t.Errorf("signal answered %v", sig)
	}
	f.problem(f.post("/v1/signals", `{"name": ""}`), 422, "unprocessable", "")
}

func TestTasks(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("review.bpmn", reviewXML)
	f.ok(f.post("/v1/processes/review/instances", `{"id": "r-1"}`), 201)
	var task string
	f.waitFor("/v1/tasks?candidateGroup=accounting", "the task of r-1", func(m map[string]any) bool {
		list, _ := m["tasks"].([]any)
		if len(list) == 1 {
			t0, _ := list[0].(map[string]any)
			task, _ = t0["id"].(string)
		}
		return task != ""
	})
	path := "/v1/tasks/" + url.PathEscape(task)
	if got := f.ok(f.get(path), 200); got["id"] != task {
		t.Fatalf("task = %v", got)
	}
	if got := f.ok(f.post(path+"/claim", `{"user": "alice"}`), 200); got["assignee"] != "alice" {
		t.Errorf("claim answered %v", got)
	}
	f.problem(f.post(path+"/claim", `{"user": "bob"}`), 409, "conflict", "alice")
	f.ok(f.post(path+"/unclaim", `{"user": "alice"}`), 200)
	f.ok(f.post(path+"/assign", `{"user": "carol"}`), 200)
	if got := f.ok(f.post(path+"/update", `{"priority": 80, "dueDate": "2026-12-24"}`), 200); got["priority"] != float64(80) {
		t.Errorf("update answered %v", got)
	}
	f.problem(f.post(path+"/update", `{"dueDate": "soon"}`), 422, "unprocessable", "dueDate")
	f.problem(f.post(path+"/claim", `{"vars": {}}`), 422, "unprocessable", "task.claim takes no vars")
	if got := f.ok(f.post(path+"/complete", `{"user": "carol", "vars": {"ok": true}}`), 200); got["state"] != "completed" {
		t.Errorf("complete answered %v", got)
	}
	f.problem(f.post(path+"/error", `{"code": "X"}`), 409, "finished", "")
	f.problem(f.get("/v1/tasks/nosuch"), 404, "not-found", "")
	f.problem(f.get("/v1/tasks?limit=5000"), 422, "unprocessable", "limit")
	f.waitFor("/v1/instances/r-1", "r-1 to complete", func(v map[string]any) bool { return v["status"] == "completed" })
}

func TestLimitsAndRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t, nil, httpapi.WithMaxBody(4<<10, 1<<10))
	f.problem(f.post("/v1/signals", `{"name": "`+strings.Repeat("s", 2<<10)+`"}`), 413, "too-large", "over 1024 bytes")
	f.problem(f.do("POST", "/v1/deployments", "application/xml", strings.NewReader(strings.Repeat(" ", 5<<10))), 413, "too-large", "over 4096 bytes")
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", "big.bpmn")
	io.WriteString(w, strings.Repeat(" ", 5<<10))
	mw.Close()
	f.problem(f.do("POST", "/v1/deployments", mw.FormDataContentType(), &buf), 413, "too-large", "over 4096 bytes")
	f.problem(f.do("POST", "/v1/deployments", "multipart/form-data", strings.NewReader("x")), 400, "bad-request", "boundary")
	f.problem(f.get("/v1/nosuch"), 404, "not-found", "no route GET /v1/nosuch")
	f.problem(f.do("DELETE", "/v1/instances/x", "", nil), 405, "method-not-allowed", "GET")

	// Nothing changed: no process was deployed.
	if got := f.ok(f.get("/v1/processes"), 200); fmt.Sprint(got["processes"]) != "[]" {
		t.Errorf("processes after refused requests: %v", got)
	}

	// No engine: 503.
	bare := httptest.NewServer(httpapi.New(nil))
	defer bare.Close()
	g := &fixture{t: t, url: bare.URL}
	g.problem(g.get("/v1/processes"), 503, "unavailable", "not running")
}
