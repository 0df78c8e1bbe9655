package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestServeHTTPAPIWithAuthAndTLS runs jetbpm serve with --http-auth and
// HTTPS, and calls /v1 with a real HTTP client as an operator (Basic), a
// viewer and a worker (bearer tokens) and as nobody.
func TestServeHTTPAPIWithAuthAndTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := streamstest.WritePKI(t, dir)
	hash, err := httpauth.HashPassword("alice-pw")
	if err != nil {
		t.Fatal(err)
	}
	auth := fmt.Sprintf(`users:
  - {name: alice, bcrypt: %q, roles: [operator]}
tokens:
  - {name: dashboard, sha256: %s, roles: [viewer]}
  - {name: payments, sha256: %s, roles: [worker], topics: [payments]}
`, hash, httpauth.HashToken("viewer-token"), httpauth.HashToken("worker-token"))
	authFile := writeFile(t, dir, "auth.yaml", auth)

	p := startServe(t, nil, "--data", filepath.Join(dir, "data"), "--listen", freeAddr(t),
		"--http-auth", authFile, "--http-tls-cert", cert, "--http-tls-key", key)
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: 30 * time.Second}
	p.https = hc
	base, _ := p.waitReady()["http"].(string)
	if base != "https://"+p.httpAddr {
		t.Fatalf("ready record's http = %q; want https://%s", base, p.httpAddr)
	}
	call := func(method, path, authz, contentType string, body io.Reader) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(data)
	}
	alice := "Basic " + basic("alice", "alice-pw")
	viewer, worker := "Bearer viewer-token", "Bearer worker-token"

	if code, _, body := call("GET", "/healthz", "", "", nil); code != 200 || body != "ok\n" {
		t.Errorf("/healthz without credentials: %d %q", code, body)
	}
	code, hdr, body := call("GET", "/v1/processes", "", "", nil)
	if code != 401 || !strings.Contains(body, "urn:jetbpm:problem:unauthenticated") || len(hdr.Values("WWW-Authenticate")) != 2 ||
		!strings.HasPrefix(hdr.Get("WWW-Authenticate"), `Basic realm="jetbpm"`) {
		t.Errorf("no credentials: %d %v %s", code, hdr, body)
	}
	for _, bad := range []string{"Basic " + basic("alice", "wrong"), "Basic " + basic("mallory", "x"), "Bearer nope", "Digest x"} {
		if code, _, body := call("GET", "/v1/processes", bad, "", nil); code != 401 {
			t.Errorf("%s: %d %s; want 401", bad, code, body)
		}
	}

	// The operator deploys (multipart, as curl -F sends it) and starts.
	order, err := os.ReadFile(orderBPMN)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "order.bpmn")
	fw.Write(order)
	mw.Close()
	if code, _, body := call("POST", "/v1/deployments", viewer, mw.FormDataContentType(), bytes.NewReader(buf.Bytes())); code != 403 ||
		!strings.Contains(body, "urn:jetbpm:problem:forbidden") || !strings.Contains(body, `needs one of the roles operator`) {
		t.Errorf("viewer deploys: %d %s; want 403", code, body)
	}
	if code, _, body := call("POST", "/v1/deployments", alice, mw.FormDataContentType(), &buf); code != 200 || !strings.Contains(body, `"processId":"order"`) {
		t.Fatalf("operator deploys: %d %s", code, body)
	}
	code, hdr, body = call("POST", "/v1/processes/order/instances", alice, "application/json", strings.NewReader(`{"id": "o-1", "vars": {"amount": 5}}`))
	if code != 201 || hdr.Get("Location") != "/v1/instances/o-1" {
		t.Fatalf("operator starts: %d %v %s", code, hdr, body)
	}

	// The viewer reads, the worker may not.
	code, _, body = call("GET", "/v1/instances/o-1", viewer, "", nil)
	var v struct {
		ID, ProcessID string
	}
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil || v.ID != "o-1" || v.ProcessID != "order" {
		t.Errorf("viewer reads o-1: %d %s", code, body)
	}
	if code, _, body := call("GET", "/v1/processes/order/xml", viewer, "", nil); code != 200 || body != string(order) {
		t.Errorf("viewer reads order's XML: %d, %d bytes", code, len(body))
	}
	if code, _, body := call("GET", "/v1/instances", worker, "", nil); code != 403 || !strings.Contains(body, `(roles worker) may not GET /v1/instances`) {
		t.Errorf("worker lists instances: %d %s; want 403", code, body)
	}
	if code, _, _ := call("GET", "/v1/openapi.json", "", "", nil); code != 200 {
		t.Errorf("/v1/openapi.json without credentials: %d; want 200 (it is public)", code)
	}

	// The Camunda 7 REST API sits behind the same authentication and
	// answers in Camunda's error format; a worker token works its topics only.
	fetch := func(topic string) string {
		return `{"workerId":"w","maxTasks":1,"topics":[{"topicName":"` + topic + `","lockDuration":1000}]}`
	}
	for _, c := range []struct {
		method, path, authz, body string
		code                      int
		want                      string
	}{
		{"GET", "/engine-rest/version", "", "", 401, `"type":"AuthenticationException"`},
		{"POST", "/engine-rest/external-task/fetchAndLock", worker, fetch("payments"), 200, `[`},
		{"POST", "/engine-rest/external-task/fetchAndLock", worker, fetch("other"), 403, `"type":"AuthorizationException"`},
		{"POST", "/engine-rest/process-definition/key/order/start", worker, `{}`, 403, `may not start`},
		{"GET", "/engine-rest/process-definition?key=order", alice, "", 200, `"id":"order:1"`},
	} {
		code, hdr, body := call(c.method, c.path, c.authz, "application/json", strings.NewReader(c.body))
		if code != c.code || hdr.Get("Content-Type") != "application/json" || !strings.Contains(body, c.want) {
			t.Errorf("%s %s as %q: %d %q %s; want %d with %s", c.method, c.path, c.authz, code, hdr.Get("Content-Type"), body, c.code, c.want)
		}
	}

	// So does Camunda 8's REST API, /v2, answering refusals as problem
	// details.
	for _, c := range []struct {
		method, path, authz, body string
		code                      int
		ctype, want               string
	}{
		{"GET", "/v2/topology", "", "", 401, "application/problem+json", `"status":401`},
		{"GET", "/v2/topology", viewer, "", 200, "application/json", `"partitionsCount":`},
		{"POST", "/v2/jobs/activation", worker, `{"type":"payments","maxJobsToActivate":1,"timeout":1000,"requestTimeout":-1}`, 200, "application/json", `"jobs":[`},
		{"POST", "/v2/jobs/activation", worker, `{"type":"other","maxJobsToActivate":1,"timeout":1000,"requestTimeout":-1}`, 403, "application/problem+json", `may not work jobs of type \"other\"`},
		{"POST", "/v2/process-instances", viewer, `{"processDefinitionId":"order"}`, 403, "application/problem+json", `may not POST /process-instances`},
	} {
		code, hdr, body := call(c.method, c.path, c.authz, "application/json", strings.NewReader(c.body))
		if code != c.code || hdr.Get("Content-Type") != c.ctype || !strings.Contains(body, c.want) {
			t.Errorf("%s %s as %q: %d %q %s; want %d with %s", c.method, c.path, c.authz, code, hdr.Get("Content-Type"), body, c.code, c.want)
		}
	}

	// Plain HTTP on the TLS listener gets nowhere.
	if res, err := http.Get("http://" + p.httpAddr + "/v1/processes"); err == nil {
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS listener: %d", res.StatusCode)
		}
	}
}

func basic(user, password string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, password)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

func TestServeRefusesAnOpenHTTPAPI(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, `--http 0.0.0.0:0 is not a loopback address: give --http-auth FILE`},
		{[]string{"--http", ":9464"}, `--http :9464 is not a loopback address`},
		{[]string{"--grpc", ":26500"}, `--grpc :26500 is not a loopback address: give --http-auth FILE so callers authenticate, or --http-insecure to serve the Zeebe gateway`},
		{[]string{"--http-tls-cert", "c.pem"}, `--http-tls-cert and --http-tls-key go together`},
		{[]string{"--http-auth", filepath.Join(dir, "nosuch.yaml")}, `http auth: open .*nosuch.yaml: no such file`},
		{[]string{"--http-auth", writeFile(t, dir, "bad.yaml", "users:\n  - {name: bob, bcrypt: x, roles: [admin]}\n")},
			`users\[0\] \(bob\): unknown role "admin": want one of operator, viewer, tasklist, integration, worker; users\[0\]: bcrypt: not a bcrypt hash`},
	}
	for _, c := range cases {
		args := append([]string{"serve", "--data", dir, "--listen", freeAddr(t)}, c.args...)
		code := 2
		if strings.Contains(c.want, "http auth") || strings.Contains(c.want, "users") {
			code = 1
		}
		checkFails(t, nil, code, c.want, args...)
	}
}
