package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// serve mounts the web console at / of --http, behind the API's
// authentication: a viewer gets the pages and the counts, no credentials
// get 401, a worker 403.
func TestServeConsole(t *testing.T) {
	dir := t.TempDir()
	auth := writeFile(t, dir, "auth.yaml", fmt.Sprintf(`tokens:
  - {name: dashboard, sha256: %s, roles: [viewer]}
  - {name: payments, sha256: %s, roles: [worker], topics: [payments]}
`, httpauth.HashToken("viewer-token"), httpauth.HashToken("worker-token")))
	p := startServe(t, nil, "--data", filepath.Join(dir, "data"), "--listen", freeAddr(t), "--http-auth", auth)
	p.waitReady()
	get := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+p.httpAddr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	for _, path := range []string{"/", "/incidents", "/console/vendor/bpmn-viewer.production.min.js"} {
		if code, _ := get(path, ""); code != 401 {
			t.Errorf("GET %s without credentials: %d, want 401", path, code)
		}
		if code, _ := get(path, "worker-token"); code != 403 {
			t.Errorf("GET %s as a worker: %d, want 403", path, code)
		}
	}
	code, body := get("/incidents", "viewer-token")
	app := regexp.MustCompile(`<script type="module" src="(/console/static/[0-9a-f]+/assets/app.js)">`).FindStringSubmatch(body)
	if code != 200 || app == nil {
		t.Fatalf("GET /incidents as a viewer: %d %.300s", code, body)
	}
	if code, _ := get(app[1], "viewer-token"); code != 200 {
		t.Errorf("GET %s as a viewer: %d", app[1], code)
	}
	if code, _ := get(app[1], ""); code != 401 {
		t.Errorf("GET %s without credentials: %d, want 401", app[1], code)
	}
	if code, body := get("/console/overview", "viewer-token"); code != 200 || !strings.Contains(body, `"processes":[]`) {
		t.Errorf("GET /console/overview as a viewer: %d %s", code, body)
	}
	if code, _ := get("/healthz", ""); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
}
