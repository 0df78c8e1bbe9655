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
			_, _ = io.WriteString(w, `{"status":"accepted","auth":"`+r.Header.Get("Authorization")+`","items":`+jsonOf(body["items"])+`}`)
		case "/orders/taken":
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"detail":"order `+fmt.Sprint(body["id"])+` exists"}`)
		default:
			downCalls.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()

	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	model, err := os.Open("testdata/order.bpmn")
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	if _, err := eng.DeployXML(ctx, model); err != nil {
		t.Fatal(err)
	}

	c, err := rest.New(rest.Config{
		Hosts:   []string{api.Listener.Addr().String()},
		Secrets: func(name string) (string, bool) { return "t0ken", name == "SHOP_TOKEN" },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := workerkit.New(env.NewConn(t), workerkit.Options{Name: "connectors",
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle(rest.Type, c.Run, workerkit.Concurrency(4))
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("the worker did not stop")
		}
	}()

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

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
