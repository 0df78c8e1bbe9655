package camunda7_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// orderXML is a Camunda 7 model: an external task on topic "charge" (lock
// lockDuration) whose BPMN error DECLINED ends on the boundary's path.
func orderXML(lock string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" id="defs">
<bpmn:process id="order" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
  <bpmn:serviceTask id="charge" camunda:type="external" camunda:topic="charge">
    <bpmn:extensionElements><jetbpm:worker lockDuration="` + lock + `" maxLockDuration="PT1M"/></bpmn:extensionElements>
  </bpmn:serviceTask>
  <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="done"/>
  <bpmn:endEvent id="done"/>
  <bpmn:boundaryEvent id="declined" attachedToRef="charge"><bpmn:errorEventDefinition errorRef="err"/></bpmn:boundaryEvent>
  <bpmn:sequenceFlow id="f3" sourceRef="declined" targetRef="rejected"/>
  <bpmn:endEvent id="rejected"/>
</bpmn:process>
<bpmn:error id="err" errorCode="DECLINED"/>
</bpmn:definitions>
`
}

type fixture struct {
	env *streamstest.Env
	eng *engine.Engine
	c7  *camunda7.Handler
	srv *httptest.Server
}

func setup(t *testing.T, opts camunda7.Options) *fixture {
	t.Helper()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, engine.Options{})
	if opts.Logger == nil {
		opts.Logger = enginetest.QuietLog
	}
	h, err := camunda7.New(eng, env.Conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	mux := http.NewServeMux()
	mux.Handle(camunda7.Prefix+"/", http.StripPrefix(camunda7.Prefix, h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{env: env, eng: eng, c7: h, srv: srv}
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// response is an HTTP answer, read whole.
type response struct {
	status int
	ctype  string
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// restErr decodes a Camunda error body and checks its shape.
func (r response) restErr(t *testing.T, status int) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if r.ctype != "application/json" {
		t.Fatalf("error content type %q, want exactly application/json", r.ctype)
	}
	var e map[string]any
	r.decode(t, &e)
	if typ, _ := e["type"].(string); typ == "" {
		t.Fatalf("error without a type: %s", r.body)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("error without a message: %s", r.body)
	}
	return e
}

func (f *fixture) call(t *testing.T, method, path string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, f.srv.URL+camunda7.Prefix+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}
}

// deploy posts files as Camunda Modeler's deploy button does.
func (f *fixture) deploy(t *testing.T, name, xml string) response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("deployment-name", "test")
	_ = mw.WriteField("deployment-source", "Camunda Modeler")
	_ = mw.WriteField("enable-duplicate-filtering", "true")
	fw, err := mw.CreateFormFile(name, name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(fw, xml)
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctxT(t), "POST", f.srv.URL+camunda7.Prefix+"/deployment/create", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}
}

// start starts order with vars and returns the instance id.
func (f *fixture) start(t *testing.T, vars map[string]any) string {
	t.Helper()
	r := f.call(t, "POST", "/process-definition/key/order/start", map[string]any{"variables": vars})
	if r.status != 200 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var pi struct{ ID string }
	r.decode(t, &pi)
	return pi.ID
}

// lockedTask is the part of a locked task the tests read.
type lockedTask struct {
	ID                 string                    `json:"id"`
	TopicName          string                    `json:"topicName"`
	WorkerID           string                    `json:"workerId"`
	ProcessInstanceID  string                    `json:"processInstanceId"`
	ActivityID         string                    `json:"activityId"`
	LockExpirationTime string                    `json:"lockExpirationTime"`
	Retries            *int                      `json:"retries"`
	ErrorMessage       *string                   `json:"errorMessage"`
	BusinessKey        *string                   `json:"businessKey"`
	Variables          map[string]map[string]any `json:"variables"`
}

func (f *fixture) fetch(t *testing.T, worker string, max int, waitMs int64) []lockedTask {
	t.Helper()
	r := f.call(t, "POST", "/external-task/fetchAndLock", map[string]any{
		"workerId": worker, "maxTasks": max, "usePriority": true, "asyncResponseTimeout": waitMs,
		"topics": []any{map[string]any{"topicName": "charge", "lockDuration": 10000}},
	})
	if r.status != 200 || r.ctype != "application/json" {
		t.Fatalf("fetchAndLock: %d %q %s", r.status, r.ctype, r.body)
	}
	var out []lockedTask
	r.decode(t, &out)
	return out
}

// fetchOne long-polls until worker gets one task.
func (f *fixture) fetchOne(t *testing.T, worker string) lockedTask {
	t.Helper()
	got := f.fetch(t, worker, 1, 20000)
	if len(got) != 1 {
		t.Fatalf("%s fetched %d tasks in 20 s, want 1", worker, len(got))
	}
	return got[0]
}

func (f *fixture) waitEnded(t *testing.T, id string) *engine.InstanceView {
	t.Helper()
	v, err := f.eng.Wait(ctxT(t), id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	return v
}

// oneTask waits until GET /task?query lists exactly one task and returns it.
func (f *fixture) oneTask(t *testing.T, query string) map[string]any {
	t.Helper()
	var tasks []map[string]any
	waitFor(t, "one task for "+query, func() error {
		f.call(t, "GET", "/task?"+query, nil).decode(t, &tasks)
		if len(tasks) != 1 {
			return fmt.Errorf("%d tasks", len(tasks))
		}
		return nil
	})
	return tasks[0]
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	testwait.Until(t, 15*time.Second, what, cond)
}
