package camunda7_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/httpapi"
	"github.com/jetbpm/jetbpm/internal/httpauth"
)

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// Behind jetbpm's HTTP authentication, a worker token fetches and reports
// for its topics only and may not operate the engine.
func TestWorkerTokenIsConfinedToItsTopics(t *testing.T) {
	f := setup(t, camunda7.Options{})
	auth, err := httpauth.Parse("auth.yaml", []byte(`tokens:
  - name: charge-worker
    sha256: "`+sha("w-secret")+`"
    roles: [worker]
    topics: [charge]
  - name: ops
    sha256: "`+sha("o-secret")+`"
    roles: [operator]
`))
	if err != nil {
		t.Fatal(err)
	}
	web := httpapi.New(auth)
	web.HandleEngine(camunda7.Prefix+"/", func(eng *engine.Engine) http.Handler {
		h, err := camunda7.New(eng, f.env.Conn, camunda7.Options{Authorize: camunda7.AuthorizePrincipal})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		return http.StripPrefix(camunda7.Prefix, h)
	}, httpapi.DenyWith(camunda7.Deny))
	f.call(t, "GET", "/version", nil) // the plain fixture still answers
	var bearer atomic.Value           // the token the test's requests carry
	bearer.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := bearer.Load().(string); tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		web.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.srv = srv
	f.call(t, "GET", "/version", nil).restErr(t, 401)
	token := func(tok string) { bearer.Store(tok) }
	token("o-secret")
	// Until the engine is set: 503 in Camunda's error format.
	f.call(t, "GET", "/version", nil).restErr(t, 503)
	web.SetEngine(f.eng)
	if r := f.deploy(t, "order.bpmn", orderXML("PT30S")); r.status != 200 {
		t.Fatalf("operator deploy: %d %s", r.status, r.body)
	}
	id := f.start(t, nil)

	token("w-secret")
	f.deploy(t, "order.bpmn", orderXML("PT30S")).restErr(t, 403)
	f.call(t, "POST", "/process-definition/key/order/start", map[string]any{}).restErr(t, 403)
	e := f.call(t, "POST", "/external-task/fetchAndLock", map[string]any{"workerId": "w", "maxTasks": 1,
		"topics": []any{map[string]any{"topicName": "payments"}}}).restErr(t, 403)
	if !strings.Contains(e["message"].(string), "payments") || e["type"] != "AuthorizationException" {
		t.Errorf("fetch of another topic: %v", e)
	}
	task := f.fetchOne(t, "w")
	if task.ProcessInstanceID != id {
		t.Fatalf("fetched %+v", task)
	}
	if r := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w"}); r.status != 204 {
		t.Fatalf("worker complete: %d %s", r.status, r.body)
	}
	f.waitEnded(t, id)
}
