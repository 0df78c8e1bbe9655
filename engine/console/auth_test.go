package console_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// tokens are the bearer tokens of the test's auth file, by role.
var tokens = map[string]string{"operator": "op-secret", "viewer": "view-secret", "tasklist": "task-secret", "worker": "work-secret"}

func authFile(t *testing.T) *httpauth.Authenticator {
	t.Helper()
	var b strings.Builder
	b.WriteString("tokens:\n")
	for role, tok := range tokens {
		sum := sha256.Sum256([]byte(tok))
		fmt.Fprintf(&b, "  - name: %s-user\n    sha256: %q\n    roles: [%s]\n", role, hex.EncodeToString(sum[:]), role)
		if role == "worker" {
			b.WriteString("    topics: [\"*\"]\n")
		}
	}
	a, err := httpauth.Parse("test", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func request(t *testing.T, h http.Handler, method, path, role string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader("{}"))
	r.Header.Set("Content-Type", "application/json")
	if role != "" {
		r.Header.Set("Authorization", "Bearer "+tokens[role])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// The console reads with the API's authentication: no credentials get
// 401, the viewer reads everything and changes nothing (the API refuses
// it), the tasklist role gets the pages but not the operators' views, a
// worker gets nothing.
func TestAuth(t *testing.T) {
	f := newFixture(t)
	inc := f.start(t, "a1").Incidents[0].ID
	h := f.listener(authFile(t))
	type want struct {
		method, path string
		codes        map[string]int // by role; "" is no credentials
	}
	page := map[string]int{"": 401, "operator": 200, "viewer": 200, "tasklist": 200, "worker": 403}
	read := map[string]int{"": 401, "operator": 200, "viewer": 200, "tasklist": 403, "worker": 403}
	for _, w := range []want{
		{"GET", "/", page},
		{"GET", "/tasks", page},
		{"GET", "/console/assets/app.js", page},
		{"GET", "/console/vendor/bpmn-viewer.production.min.js", page},
		{"GET", "/console/overview", read},
		{"GET", "/console/processes/charge/nodes", read},
		{"GET", "/console/instances/a1/timeline", read},
		// Every change is the API's: it refuses the viewer and the tasklist role.
		{"POST", "/v1/incidents/" + strings.ReplaceAll(inc, "/", "%2F") + "/abandon", map[string]int{"": 401, "viewer": 403, "tasklist": 403, "worker": 403}},
	} {
		for role, code := range w.codes {
			rec := request(t, h, w.method, w.path, role)
			if rec.Code != code {
				t.Errorf("%s %s as %q: %d, want %d: %s", w.method, w.path, role, rec.Code, code, rec.Body)
			}
			if code == 403 && strings.HasPrefix(w.path, "/console/") && !strings.Contains(rec.Body.String(), "needs the operator, viewer or tasklist role") {
				t.Errorf("%s as %s: 403 body %s", w.path, role, rec.Body)
			}
		}
	}
	if v, err := f.eng.Instance(tctx(t), "a1"); err != nil || len(v.Incidents) != 1 {
		t.Fatalf("a refused abandon changed the instance: %+v %v", v, err)
	}
}

// The event feed: a viewer gets every fact, a task user only the task
// facts, a worker nothing.
func TestAuthEventFeed(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.listener(authFile(t)))
	t.Cleanup(srv.Close)
	feed := func(role string) sse {
		req, _ := http.NewRequestWithContext(tctx(t), "GET", srv.URL+"/console/events", nil)
		req.Header.Set("Authorization", "Bearer "+tokens[role])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.StatusCode != 200 {
			t.Fatalf("feed as %s: %d", role, res.StatusCode)
		}
		s := sse{bufioReader(res)}
		if ev, _ := s.next(t); ev != "ready" {
			t.Fatalf("feed as %s: first event %q", role, ev)
		}
		return s
	}
	viewer, tasks := feed("viewer"), feed("tasklist")
	req, _ := http.NewRequest("GET", srv.URL+"/console/events", nil)
	req.Header.Set("Authorization", "Bearer "+tokens["worker"])
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 403 {
		t.Fatalf("feed as worker: %v %v", res, err)
	}

	v := f.start(t, "e1") // started, incident raised
	if err := f.eng.ResolveIncident(tctx(t), v.Incidents[0].ID, nil); err != nil {
		t.Fatal(err) // incident resolved, task created
	}
	subject := func(s sse) string {
		_, data := s.next(t)
		var ev struct{ Subject string }
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		return ev.Subject
	}
	if got := subject(viewer); got != "jetbpm.fact.instance.charge.started" {
		t.Fatalf("viewer's first fact %s", got)
	}
	if got := subject(tasks); got != "jetbpm.fact.task.charge.created" {
		t.Fatalf("task user's first fact %s, want the task's creation only", got)
	}
}
