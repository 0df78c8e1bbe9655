package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/connectors/rest"
	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams/streamstest"
	"github.com/jetbpm/jetbpm/workerkit"
)

const waitLimit = 30 * time.Second

// A model made with Camunda's REST connector template runs unchanged: the
// call's answer becomes its variables, a 409 the errorExpression maps is
// caught by the error boundary, and a 503 the task retries twice, then is
// an incident naming the status.
func TestRESTConnectorModel(t *testing.T) {
	var downCalls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/orders/ok":
			_, _ = io.WriteString(w, `{"status":"accepted","auth":"`+r.Header.Get("Authorization")+`","items":`+fmt.Sprint(body["items"])+`}`)
		case "/orders/taken":
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"detail":"order `+fmt.Sprint(body["id"])+` exists"}`)
		default:
			downCalls.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()

	eng := setup(t, api, "testdata/order.bpmn")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	start := func(path string) string {
		id, err := eng.Start(ctx, "order", map[string]any{"baseUrl": api.URL, "path": path, "orderId": "o-" + path, "items": []any{1, 2, 3}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ok, taken, down := start("ok"), start("taken"), start("down")

	v, err := eng.Wait(ctx, ok)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := v.Variables["orderResponse"].(map[string]any)
	body, _ := resp["body"].(map[string]any)
	if v.Status != instance.Completed || v.Variables["orderStatus"] != "accepted" || fmt.Sprint(resp["status"]) != "200" ||
		body["auth"] != "Bearer t0ken" || fmt.Sprint(body["items"]) != "3" || !slices.Contains(v.Passed, "placed") {
		t.Errorf("ok: %+v", v)
	}
	v, err = eng.Wait(ctx, taken)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != instance.Completed || !slices.Contains(v.Passed, "conflicted") || slices.Contains(v.Passed, "placed") ||
		v.Variables["orderResponse"] != nil {
		t.Errorf("taken: %+v, want it to end at conflicted", v)
	}
	v, err = eng.WaitUntil(ctx, down, func(v *engine.InstanceView) bool {
		return v.Status == engine.StatusIncident || v.Status.Finished()
	})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != engine.StatusIncident || len(v.Incidents) != 1 || v.Incidents[0].Node != "call" ||
		!strings.Contains(v.Incidents[0].Cause, "503") || downCalls.Load() != 2 {
		t.Errorf("down: %+v after %d calls, want an incident at call naming 503 after 2", v, downCalls.Load())
	}
}

// setup runs an engine with files deployed (a model and its scripts) and
// the connectors' worker, allowed to call api, with the secret
// SHOP_TOKEN.
func setup(t *testing.T, api *httptest.Server, files ...string) *engine.Engine {
	t.Helper()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var res []engine.Resource
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, engine.Resource{Name: filepath.Base(f), XML: data})
	}
	if _, err := eng.DeployResources(ctx, res...); err != nil {
		t.Fatal(err)
	}

	c, err := rest.New(rest.Config{
		Hosts:   []string{api.Listener.Addr().String()},
		Secrets: func(name string) (string, bool) { return "t0ken", name == "SHOP_TOKEN" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w, err := workerkit.New(env.NewConn(t), workerkit.Options{Name: "connectors",
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle(rest.Type, c.Run, workerkit.Concurrency(4))
	w.Handle(rest.Camunda7Topic, c.RunCamunda7, workerkit.Concurrency(4))
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("the worker did not stop")
		}
	})
	return eng
}

// Camunda 7's http-connector: the connector's inputs make the request
// (a map of headers, a composite payload), its outputs read statusCode
// and response (a 500 too: Camunda 7 completes whatever the status), and
// a connector without outputs writes nothing.
func TestCamunda7HTTPConnectorModel(t *testing.T) {
	var pings atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ping" {
			pings.Add(1)
			_, _ = io.WriteString(w, "pong")
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/orders/broken" {
			w.WriteHeader(http.StatusInternalServerError)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"state": r.Header.Get("X-Order") + " " + r.Header.Get("Content-Type") + " " + string(body)})
	}))
	defer api.Close()
	eng := setup(t, api, "testdata/camunda7.bpmn")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	for path, status := range map[string]string{"ok": "200", "broken": "500"} {
		id, err := eng.Start(ctx, "notify", map[string]any{"baseUrl": api.URL, "path": path, "orderId": "o-1"})
		if err != nil {
			t.Fatal(err)
		}
		v, err := eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool {
			return v.Status == engine.StatusIncident || v.Status.Finished()
		})
		if err != nil {
			t.Fatal(err)
		}
		want := `o-1 application/json {"id": "o-1"}`
		if v.Status != instance.Completed || fmt.Sprint(v.Variables["status"]) != status || v.Variables["answer"] != want {
			t.Errorf("%s: %+v, want status %s and answer %q", path, v, status, want)
		}
		for _, name := range []string{"response", "statusCode", "headers", "url", "payload"} {
			if _, ok := v.Variables[name]; ok {
				t.Errorf("%s: the connector's %s is a process variable: %v", path, name, v.Variables)
			}
		}
	}
	if pings.Load() != 2 {
		t.Errorf("%d pings, want 2", pings.Load())
	}
}

// Camunda 7's rest-service example, unchanged but for its URL
// (testdata/camunda7-rest-service/SOURCES.md): the http-connector gets
// the holidays, the output script parseHoliday.js (a classpath resource,
// deployed beside the model) reads them with connector.getVariable and
// Spin's jsonPath, and the gateway sends a holiday to "Pack for holiday".
func TestCamunda7RestServiceExample(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("jahr") != "2014" || r.Header.Get("Accept") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Neujahrstag":{"datum":"2014-01-01","hinweis":""},"Karfreitag":{"datum":"2014-04-18","hinweis":""}}`)
	}))
	defer api.Close()
	eng := setup(t, api, "testdata/camunda7-rest-service/invokeRestService.bpmn", "testdata/camunda7-rest-service/parseHoliday.js")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for date, task := range map[string]string{"2014-04-18": "UserTask_1", "2014-04-22": "UserTask_2"} {
		id, err := eng.Start(ctx, "holiday", map[string]any{"date": date, "holidayApi": api.URL + "/api/?jahr=2014&nur_land=BE"})
		if err != nil {
			t.Fatal(err)
		}
		v, err := eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool {
			return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] != "ServiceTask_1" || v.Status != instance.Active
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v.ActiveNodes, []string{task}) || v.Variables["isHoliday"] != (task == "UserTask_1") || v.Variables["response"] != nil {
			t.Errorf("%s: %+v, want it at %s", date, v, task)
		}
	}
}
