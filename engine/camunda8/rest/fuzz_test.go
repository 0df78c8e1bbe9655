package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8/rest"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// FuzzRESTBodies sends arbitrary bodies to every route that decodes one:
// the handler answers each with a status it means — never 500 — and an
// error as a problem detail.
func FuzzRESTBodies(f *testing.F) {
	routes := []string{
		"POST /process-instances", "POST /process-instances/2251799813685249/cancellation", "POST /jobs/activation",
		"POST /jobs/2251799813685249/completion", "POST /jobs/2251799813685249/failure", "POST /jobs/2251799813685249/error",
		"POST /messages/publication", "POST /messages/correlation", "POST /signals/broadcast", "POST /incidents/search",
		"POST /incidents/2251799813685249/resolution", "POST /process-instances/search", "POST /process-definitions/search",
		"POST /variables/search", "POST /user-tasks/search", "POST /user-tasks/2251799813685249/assignment",
		"PATCH /user-tasks/2251799813685249", "PUT /element-instances/2251799813685249/variables",
	}
	seeds := []string{
		``, `{}`, `null`, `[]`, `{"processDefinitionId":"quick","variables":{"amount":1}}`,
		`{"processDefinitionKey":"-5","processDefinitionVersion":-1}`, `{"processDefinitionKey":9.5}`,
		`{"processDefinitionId":"quick","awaitCompletion":true,"requestTimeout":1}`,
		`{"type":"charge","maxJobsToActivate":1,"timeout":1000,"requestTimeout":-1}`,
		`{"variables":{"a":{"b":[1,2,{"c":null}]}}}`, `{"retries":-3,"retryBackOff":-1}`, `{"errorCode":"","variables":7}`,
		`{"name":"paid","correlationKey":"k","timeToLive":1e30}`, `{"signalName":"s","tenantId":"<default>"}`,
		`{"filter":{"processInstanceKey":"x"},"page":{"from":-1}}`, `{"filter":{"state":{"$eq":"ACTIVE"}}}`,
		`{"a":1}{"b":2}`, "\x00\xff", `{"variables":{"x":1e400}}`,
	}
	for i, s := range seeds {
		f.Add(i%len(routes), s)
	}
	env := streamstest.Start(f)
	eng := enginetest.Open(f, env.Conn, engine.Options{})
	h, err := rest.New(eng, env.Conn, rest.Options{LongPoll: 10 * time.Millisecond, RequestTimeout: 50 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(h.Close)
	quick := testdataF(f, "orders.bpmn")
	if _, err := eng.DeployResources(context.Background(), engine.Resource{Name: "orders.bpmn", XML: quick}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, route int, body string) {
		if route < 0 {
			route = -route
		}
		method, path, _ := strings.Cut(routes[route%len(routes)], " ")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented && rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("%s %s %q: %d %s", method, path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var p map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p["status"] != float64(rec.Code) || p["detail"] == "" {
				t.Fatalf("%s %s %q: %d answered %q, not a problem detail", method, path, body, rec.Code, rec.Body)
			}
		}
	})
}
