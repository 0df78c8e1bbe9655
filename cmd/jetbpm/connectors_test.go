package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serve --connectors http runs Camunda 8's REST connector: a model made
// with its template calls the loopback API, its secret from
// JETBPM_SECRET_SHOP_TOKEN; the allow-list comes from the configuration
// file, and a host not on it is an incident naming it.
func TestServeRESTConnector(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"`+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}`)
	}))
	defer api.Close()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "jetbpm.yaml", "connectors:\n  kinds: [http]\n  hosts:\n    - "+api.Listener.Addr().String()+"\n  maxResponse: 4096\n")
	p := startServe(t, []string{"JETBPM_SECRET_SHOP_TOKEN=from-env"}, "--data", t.TempDir(), "--listen", freeAddr(t), "--config", cfg)
	rec := p.waitReady()
	url, _ := rec["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", "../../connectors/rest/testdata/order.bpmn")

	id := strings.TrimSpace(c.ok("start", "order", "--vars", `{"baseUrl":"`+api.URL+`","path":"ok","orderId":"o-1","items":[1]}`))
	v := c.waitInstance(id, func(v view) bool { return v.Status == "completed" })
	if v.Variables["orderStatus"] != "from-env" {
		t.Errorf("instance %+v, want orderStatus from-env (the secret, echoed)", v)
	}

	id = strings.TrimSpace(c.ok("start", "order", "--vars", `{"baseUrl":"http://evil.test:8080","path":"x","orderId":"o-2","items":[]}`))
	c.waitInstance(id, func(v view) bool { return v.Status == "incident" })
	if out := c.ok("instance", "show", id); !strings.Contains(out, "connector: host evil.test:8080 is not on the allow-list (--connector-hosts)") {
		t.Errorf("instance show:\n%s\nwant the incident naming the host", out)
	}
}

func TestServeConnectorFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--connectors", "smtp"}, `--connectors "smtp": the connector kinds are: http`},
		{[]string{"--connector-hosts", "a.test"}, "--connector-hosts needs --connectors"},
		{[]string{"--connectors", "http", "--connector-hosts", "a/b"}, `--connector-hosts: connector host "a/b"`},
		{[]string{"--connectors", "http", "--connector-max-response", "0"}, "--connector-max-response must be at least 1"},
	} {
		checkFails(t, nil, 2, tc.want, append([]string{"serve"}, tc.args...)...)
	}
}
