package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/workerkit"
)

// server is a loopback API: /orders echoes the request, /status/N
// answers N with a JSON problem, /token issues a token to client c:s,
// /hop/N redirects N times, /big answers 2 KiB, /slow answers when the
// test lets it.
type server struct {
	*httptest.Server
	release chan struct{}
	arrived chan struct{} // a request reached /slow
}

func newServer(t *testing.T) *server {
	s := &server{release: make(chan struct{}), arrived: make(chan struct{}, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/orders", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Seen", "a")
		w.Header().Add("X-Seen", "b")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "query": r.URL.RawQuery, "auth": r.Header.Get("Authorization"),
			"key": r.Header.Get("X-Api-Key"), "type": r.Header.Get("Content-Type"), "body": string(body),
			"status": "accepted",
		})
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		code := map[string]int{"404": 404, "409": 409, "500": 500, "503": 503}[r.PathValue("code")]
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"detail":"order 7 `+r.PathValue("code")+`"}`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "plain words") })
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if id != "c" || secret != "s" || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, "bad client", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"access_token":"tok-`+r.PostForm.Get("scope")+`","token_type":"Bearer"}`)
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n := r.PathValue("n")
		if n == "0" {
			_, _ = io.WriteString(w, `"arrived"`)
			return
		}
		next := map[string]string{"1": "0", "2": "1", "3": "2", "4": "3", "5": "4", "6": "5", "7": "6"}[n]
		http.Redirect(w, r, "/hop/"+next, http.StatusFound)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.test:1/", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(make([]byte, 2048)) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.arrived <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(func() { close(s.release); s.Close() })
	return s
}

// connector allows the server's host:port.
func (s *server) connector(t *testing.T, cfg Config) *Connector {
	t.Helper()
	cfg.Hosts = append(cfg.Hosts, s.Listener.Addr().String())
	if cfg.Secrets == nil {
		cfg.Secrets = secrets
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func run(t *testing.T, c *Connector, input map[string]any, headers map[string]string) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Run(ctx, &workerkit.Job{ID: "j", Topic: Type, Input: input, Headers: headers})
}

func TestCall(t *testing.T) {
	s := newServer(t)
	c := s.connector(t, Config{})
	out, err := run(t, c, map[string]any{
		"method": "POST", "url": s.URL + "/orders", "queryParameters": map[string]any{"q": "x"},
		"body": map[string]any{"id": 7.0}, "authentication": map[string]any{"type": "bearer", "token": "{{secrets.TOKEN}}"},
	}, map[string]string{"resultVariable": "answer", "resultExpression": "={orderStatus: response.body.status, code: status}"})
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := out["answer"].(map[string]any)
	body, _ := answer["body"].(map[string]any)
	headers, _ := answer["headers"].(map[string]any)
	if answer["status"] != 200 || body["method"] != "POST" || body["query"] != "q=x" || body["auth"] != "Bearer s3cr3t" ||
		body["type"] != "application/json" || body["body"] != `{"id":7}` {
		t.Errorf("answer %v", answer)
	}
	if seen, _ := headers["X-Seen"].([]any); headers["Content-Type"] != "application/json" || len(seen) != 2 || seen[1] != "b" {
		t.Errorf("headers %v", headers)
	}
	if out["orderStatus"] != "accepted" || out["code"] != 200 || len(out) != 3 {
		t.Errorf("output %v", out)
	}

	// Basic and the API key; a text body is a string.
	out, err = run(t, c, map[string]any{"url": s.URL + "/orders", "authentication": map[string]any{"type": "basic", "username": "u", "password": "p"}},
		map[string]string{"resultExpression": "={auth: body.auth}"})
	if err != nil || out["auth"] != "Basic dTpw" {
		t.Errorf("basic: %v (%v)", out, err)
	}
	out, err = run(t, c, map[string]any{"url": s.URL + "/text"}, map[string]string{"resultVariable": "r"})
	if r, _ := out["r"].(map[string]any); err != nil || r["body"] != "plain words" {
		t.Errorf("text: %v (%v)", out, err)
	}
	// Neither header: no output.
	if out, err := run(t, c, map[string]any{"url": s.URL + "/text"}, nil); err != nil || len(out) != 0 {
		t.Errorf("no result headers: %v (%v)", out, err)
	}
}

func TestOAuthClientCredentials(t *testing.T) {
	s := newServer(t)
	c := s.connector(t, Config{})
	for _, how := range []string{"basicAuthHeader", "credentialsBody"} {
		out, err := run(t, c, map[string]any{"url": s.URL + "/orders", "authentication": map[string]any{
			"type": OAuthType, "oauthTokenEndpoint": s.URL + "/token", "clientId": "c", "clientSecret": "s",
			"scopes": "read", "clientAuthentication": how,
		}}, map[string]string{"resultExpression": "={auth: response.body.auth}"})
		if err != nil || out["auth"] != "Bearer tok-read" {
			t.Errorf("%s: %v (%v)", how, out, err)
		}
	}
	_, err := run(t, c, map[string]any{"url": s.URL + "/orders", "authentication": map[string]any{
		"type": OAuthType, "oauthTokenEndpoint": s.URL + "/token", "clientId": "c", "clientSecret": "wrong"}}, nil)
	if f, ok := errors.AsType[*workerkit.TechnicalFault](err); !ok || f.Code != "401" || !strings.Contains(err.Error(), "token endpoint") {
		t.Errorf("a refused client: %v, want fault 401 naming the token endpoint", err)
	}
	_, err = run(t, c, map[string]any{"url": s.URL + "/orders", "authentication": map[string]any{
		"type": OAuthType, "oauthTokenEndpoint": "http://idp.test:1/token", "clientId": "c"}}, nil)
	if !isFinal(err) || !strings.Contains(err.Error(), "host idp.test:1 is not on the allow-list") {
		t.Errorf("a token endpoint off the list: %v", err)
	}
}

// An answer outside 2xx is a fault with the status as its code, unless
// the errorExpression maps it.
func TestErrorStatus(t *testing.T) {
	s := newServer(t)
	c := s.connector(t, Config{})
	_, err := run(t, c, map[string]any{"url": s.URL + "/status/503"}, nil)
	if f, ok := errors.AsType[*workerkit.TechnicalFault](err); !ok || f.Code != "503" || isFinal(err) ||
		!strings.Contains(err.Error(), `HTTP 503 Service Unavailable: {"detail":"order 7 503"}`) {
		t.Errorf("503: %v, want a fault 503 quoting the body", err)
	}

	errorExpr := map[string]string{"errorExpression": `=if error.code = "409" then bpmnError("CONFLICT", error.response.body.detail, {seen: orderId}) ` +
		`else if error.code = "500" then jobError("server down", {}, 0, "PT1S") ` +
		`else if response.status = 200 and response.body.status = "accepted" then bpmnError("ACCEPTED", "a 200 mapped") else null`}
	_, err = run(t, c, map[string]any{"url": s.URL + "/status/409", "orderId": "o-7"}, errorExpr)
	if b, ok := errors.AsType[*workerkit.BusinessError](err); !ok || b.Code != "CONFLICT" || b.Message != "order 7 409" || b.Vars["seen"] != "o-7" {
		t.Errorf("409: %v, want the BPMN error CONFLICT with the input's orderId", err)
	}
	_, err = run(t, c, map[string]any{"url": s.URL + "/status/500"}, errorExpr)
	if f, ok := errors.AsType[*workerkit.Failure](err); !ok || f.Retries != 0 || f.Backoff != time.Second || !strings.Contains(err.Error(), "server down") {
		t.Errorf("500: %v, want a job error with no retries", err)
	}
	_, err = run(t, c, map[string]any{"url": s.URL + "/status/404"}, errorExpr)
	if f, ok := errors.AsType[*workerkit.TechnicalFault](err); !ok || f.Code != "404" {
		t.Errorf("404 the expression leaves: %v, want fault 404", err)
	}
	_, err = run(t, c, map[string]any{"url": s.URL + "/orders"}, errorExpr)
	if b, ok := errors.AsType[*workerkit.BusinessError](err); !ok || b.Code != "ACCEPTED" {
		t.Errorf("a 200 the expression maps: %v", err)
	}
	// jobError without retries leaves them to the task's policy; the
	// earlier templates' {code: ...} context is a BPMN error.
	_, err = run(t, c, map[string]any{"url": s.URL + "/status/404"}, map[string]string{"errorExpression": `=jobError("gone")`})
	if isFinal(err) || err == nil || err.Error() != "connector: gone" {
		t.Errorf("jobError without retries: %v", err)
	}
	_, err = run(t, c, map[string]any{"url": s.URL + "/status/404"}, map[string]string{"errorExpression": `={code: "NOT_FOUND"}`})
	if b, ok := errors.AsType[*workerkit.BusinessError](err); !ok || b.Code != "NOT_FOUND" {
		t.Errorf("a {code} context: %v", err)
	}
}

// What no retry mends fails the job with no retries left.
func TestFinalFailures(t *testing.T) {
	s := newServer(t)
	c := s.connector(t, Config{MaxResponse: 1024, Hosts: []string{"elsewhere.test:2"}})
	for _, tc := range []struct {
		input   map[string]any
		headers map[string]string
		want    string
	}{
		{map[string]any{"url": "http://evil.test:8080/x"}, nil, "connector: host evil.test:8080 is not on the allow-list (--connector-hosts)"},
		{map[string]any{"url": s.URL + "/away"}, nil, "host elsewhere.test:1 is not on the allow-list"},
		{map[string]any{"url": s.URL + "/hop/7"}, nil, "more than 5 redirects"},
		{map[string]any{"url": s.URL + "/big"}, nil, "is over the limit of 1024 bytes (--connector-max-response)"},
		{map[string]any{"url": s.URL + "/{{secrets.NOPE}}"}, nil, `secret "NOPE" is not known`},
		{map[string]any{"url": s.URL + "/orders", "method": "BREW"}, nil, "connector input method"},
		{map[string]any{"url": s.URL + "/orders"}, map[string]string{"resultExpression": "=response.status"}, "resultExpression gave a number, want a context"},
		{map[string]any{"url": s.URL + "/orders"}, map[string]string{"resultExpression": "={a: "}, "connector: resultExpression: expression"},
		{map[string]any{"url": s.URL + "/orders"}, map[string]string{"errorExpression": `="oops"`}, "errorExpression gave a string, want bpmnError"},
		{map[string]any{"url": s.URL + "/orders"}, map[string]string{"errorExpression": `=bpmnError("", "x")`}, "a BPMN error without a code"},
		{map[string]any{"url": s.URL + "/orders"}, map[string]string{"errorExpression": `=jobError("x", {}, -1)`}, "retries -1, want a whole number"},
		{map[string]any{"url": s.URL + "/orders"}, map[string]string{"errorExpression": `=jobError("x", {}, 1, "soon")`}, `retryBackoff "soon"`},
	} {
		_, err := run(t, c, tc.input, tc.headers)
		if !isFinal(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want a final failure %q", tc.input, tc.headers, err, tc.want)
		}
	}
	// Five redirects are followed.
	out, err := run(t, c, map[string]any{"url": s.URL + "/hop/5"}, map[string]string{"resultVariable": "r"})
	if r, _ := out["r"].(map[string]any); err != nil || r["body"] != "arrived" {
		t.Errorf("five redirects: %v (%v)", out, err)
	}
}

// A server that does not answer within the read timeout is a fault the
// retry policy retries; a host nobody listens on, too.
func TestTimeoutsAndNetworkErrors(t *testing.T) {
	s := newServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	c := s.connector(t, Config{Hosts: []string{closed}})
	_, err = run(t, c, map[string]any{"url": s.URL + "/slow", "readTimeoutInSeconds": "0.2"}, nil)
	if err == nil || isFinal(err) || !strings.Contains(err.Error(), "read timeout: no answer for 200ms") {
		t.Errorf("a slow server: %v, want a read timeout to retry", err)
	}
	_, err = run(t, c, map[string]any{"url": "http://" + closed + "/"}, map[string]string{"errorExpression": `=if error.code = null then bpmnError("DOWN", error.message) else null`})
	if b, ok := errors.AsType[*workerkit.BusinessError](err); !ok || !strings.Contains(b.Message, "connection refused") {
		t.Errorf("connection refused through the errorExpression: %v", err)
	}
	_, err = run(t, c, map[string]any{"url": "http://" + closed + "/"}, nil)
	if err == nil || isFinal(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("connection refused: %v, want a fault to retry", err)
	}
}

// A job whose lock is lost mid-call ends with its context's cause.
func TestCancelledCall(t *testing.T) {
	s := newServer(t)
	c := s.connector(t, Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	lost := errors.New("lock lost")
	go func() {
		select {
		case <-s.arrived:
			cancel(lost)
		case <-time.After(30 * time.Second):
			cancel(errors.New("the request never arrived"))
		}
	}()
	_, err := c.Run(ctx, &workerkit.Job{Input: map[string]any{"url": s.URL + "/slow", "readTimeoutInSeconds": 0}})
	if !errors.Is(err, lost) {
		t.Errorf("got %v, want the cause %v", err, lost)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	if _, err := New(Config{Hosts: []string{"a/b"}}); err == nil || !strings.Contains(err.Error(), `"a/b"`) {
		t.Errorf("a bad host: %v", err)
	}
	if _, err := New(Config{MaxResponse: -1}); err == nil {
		t.Error("a negative limit taken")
	}
}

func isFinal(err error) bool {
	f, ok := errors.AsType[*workerkit.Failure](err)
	return ok && f.Retries == 0
}

// Camunda 7's http-connector: any status completes with statusCode and
// the body as text; a payload that is not a string is sent as JSON.
func TestRunCamunda7(t *testing.T) {
	s := newServer(t)
	c := s.connector(t, Config{})
	job := func(in map[string]any) (map[string]any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return c.RunCamunda7(ctx, &workerkit.Job{Topic: Camunda7Topic, Input: in})
	}
	out, err := job(map[string]any{"url": s.URL + "/orders", "method": "PUT", "payload": map[string]any{"a": 1.0},
		"headers": map[string]any{"X-Api-Key": "{{secrets.TOKEN}}"}})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := out["response"].(string)
	var echo map[string]any
	if json.Unmarshal([]byte(text), &echo) != nil || echo["method"] != "PUT" || echo["body"] != `{"a":1}` ||
		echo["key"] != "s3cr3t" || echo["type"] != "application/json" || out["statusCode"] != 200 {
		t.Errorf("output %v", out)
	}
	if h, _ := out["headers"].(map[string]any); h["Content-Type"] != "application/json" {
		t.Errorf("headers %v", out["headers"])
	}
	out, err = job(map[string]any{"url": s.URL + "/status/404"})
	if err != nil || out["statusCode"] != 404 || out["response"] != `{"detail":"order 7 404"}` {
		t.Errorf("404: %v (%v), want it completed", out, err)
	}
	if _, err := job(map[string]any{"url": "http://evil.test/"}); !isFinal(err) {
		t.Errorf("off the allow-list: %v", err)
	}
}
