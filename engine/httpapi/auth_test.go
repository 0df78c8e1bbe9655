package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/httpapi"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func tokens(t *testing.T) *httpauth.Authenticator {
	t.Helper()
	var b strings.Builder
	b.WriteString("tokens:\n")
	for _, r := range []string{"operator", "viewer", "tasklist", "integration"} {
		b.WriteString("  - {name: " + r + ", sha256: " + httpauth.HashToken(r+"-token") + ", roles: [" + r + "]}\n")
	}
	b.WriteString("  - {name: worker, sha256: " + httpauth.HashToken("worker-token") + ", roles: [worker], topics: [payments]}\n")
	a, err := httpauth.Parse("tokens", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRolesPerRoute checks one route of each kind against every role.
func TestRolesPerRoute(t *testing.T) {
	t.Parallel()
	f := setup(t, tokens(t))
	f.auth = "Bearer operator-token"
	f.deploy("review.bpmn", reviewXML)

	routes := []struct {
		method, path, body string
		allowed            []string
	}{
		{"GET", "/v1/processes", "", []string{"operator", "viewer"}},
		{"POST", "/v1/processes/review/instances", `{}`, []string{"operator"}},
		{"GET", "/v1/tasks", "", []string{"operator", "viewer", "tasklist"}},
		{"POST", "/v1/tasks/nosuch/claim", `{"user": "u"}`, []string{"operator", "tasklist"}},
		{"GET", "/v1/tasks/nosuch.t1/form", "", []string{"operator", "viewer", "tasklist"}},
		{"POST", "/v1/signals", `{"name": "s"}`, []string{"operator", "integration"}},
		{"POST", "/v1/deployments", `{"files": []}`, []string{"operator"}},
	}
	for _, rt := range routes {
		for _, role := range []string{"operator", "viewer", "tasklist", "integration", "worker"} {
			f.auth = "Bearer " + role + "-token"
			r := f.do(rt.method, rt.path, "application/json", strings.NewReader(rt.body))
			allowed := false
			for _, a := range rt.allowed {
				allowed = allowed || a == role
			}
			if allowed && (r.status == 401 || r.status == 403) || !allowed && r.status != 403 {
				t.Errorf("%s %s as %s: %d %s; allowed %t", rt.method, rt.path, role, r.status, r.body, allowed)
			}
			if !allowed {
				f.problem(r, 403, "forbidden", "needs one of the roles "+strings.Join(rt.allowed, ", "))
			}
		}
	}
	f.auth = ""
	r := f.get("/v1/processes")
	f.problem(r, 401, "unauthenticated", "no credentials")
	if got := r.header.Values("WWW-Authenticate"); len(got) != 2 || !strings.HasPrefix(got[0], "Basic ") || !strings.HasPrefix(got[1], "Bearer ") {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	f.auth = "Bearer wrong"
	f.problem(f.get("/v1/processes"), 401, "unauthenticated", "unknown bearer token")
	// The OpenAPI document is public.
	f.auth = ""
	if r := f.get("/v1/openapi.json"); r.status != 200 {
		t.Errorf("openapi.json without credentials: %d", r.status)
	}
}

// TestMountedHandlers: Handle and HandleEngine put other front ends
// behind the same authentication; HandlePublic does not.
func TestMountedHandlers(t *testing.T) {
	t.Parallel()
	srv := httpapi.New(tokens(t), httpapi.WithLogger(enginetest.QuietLog))
	srv.HandlePublic("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Handle("/console/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := httpauth.FromContext(r.Context())
		if !p.Allows(httpauth.Read) {
			httpapi.Deny(w, r, 403, p.Name+" may not read")
			return
		}
		io.WriteString(w, "console for "+p.Name)
	}))
	camundaDeny := func(w http.ResponseWriter, r *http.Request, status int, detail string) {
		w.WriteHeader(status)
		io.WriteString(w, `{"type":"AuthenticationException","message":"`+detail+`"}`)
	}
	builds := 0
	srv.HandleEngine("/engine-rest/", func(eng *engine.Engine) http.Handler {
		builds++
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := httpauth.FromContext(r.Context())
			io.WriteString(w, "may work payments: "+map[bool]string{true: "yes", false: "no"}[p.MayWork("payments")])
		})
	}, httpapi.DenyWith(camundaDeny))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	call := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", hs.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, token string
		status      int
		body        string
	}{
		{"/healthz", "", 200, "ok"},
		{"/console/", "", 401, "urn:jetbpm:problem:unauthenticated"},
		{"/console/", "viewer-token", 200, "console for viewer"},
		{"/console/", "worker-token", 403, "worker may not read"},
		{"/engine-rest/external-task", "", 401, `"type":"AuthenticationException"`},
		{"/engine-rest/external-task", "worker-token", 503, "engine is not running"},
		{"/v1/processes", "operator-token", 503, "urn:jetbpm:problem:unavailable"},
	} {
		if status, body := call(c.path, c.token); status != c.status || !strings.Contains(body, c.body) {
			t.Errorf("GET %s with %q: %d %s; want %d and %q", c.path, c.token, status, body, c.status, c.body)
		}
	}
	env := streamstest.Start(t)
	srv.SetEngine(enginetest.Open(t, env.Conn, engine.Options{Logger: enginetest.QuietLog}))
	if builds != 1 || srv.Engine() == nil {
		t.Fatalf("after SetEngine: %d builds, engine %v", builds, srv.Engine())
	}
	for token, want := range map[string]string{"worker-token": "yes", "operator-token": "yes", "viewer-token": "no"} {
		if status, body := call("/engine-rest/external-task", token); status != 200 || body != "may work payments: "+want {
			t.Errorf("engine-rest as %s: %d %s", token, status, body)
		}
	}
	if status, _ := call("/v1/processes", "operator-token"); status != 200 {
		t.Errorf("/v1 after SetEngine: %d", status)
	}
	srv.SetEngine(nil)
	if status, _ := call("/engine-rest/x", "worker-token"); status != 503 {
		t.Errorf("engine-rest after SetEngine(nil): %d; want 503", status)
	}
}
