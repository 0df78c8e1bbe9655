package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/streams/embedded"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestTLSEndToEnd runs the engine and a worker against a NATS server that
// only speaks TLS (certificates made for the test): jetbpm serve
// --nats-url tls://… --tls-ca, the client commands and jetbpm work with the
// same flag, and a payment completes.
func TestTLSEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := streamstest.WritePKI(t, dir)
	conf := filepath.Join(dir, "tls.conf")
	content := fmt.Sprintf("jetstream { store_dir: %q }\ntls { cert_file: %q, key_file: %q }\n", filepath.Join(dir, "js"), cert, key)
	if err := os.WriteFile(conf, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(dir, "js"), Port: -1, ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := srv.ClientURL()
	if !strings.HasPrefix(url, "tls://") {
		t.Fatalf("the server does not require TLS: %s", url)
	}

	serve := startServe(t, nil, "--nats-url", url, "--tls-ca", ca)
	serve.waitReady()
	env := []string{"JETBPM_NATS_URL=" + url}
	c := client{t: t, env: env, flags: []string{"--tls-ca", ca}}
	c.ok("deploy", "../../examples/payment.bpmn")
	startWork(t, env, "--topic", "charge", "--tls-ca", ca, "--", "../../examples/charge.sh")
	id := strings.TrimSpace(c.ok("start", "payment", "--vars", `{"amount": 40}`))
	v := c.waitInstance(id, func(v view) bool { return v.Status != "active" })
	if v.Status != "completed" || !strings.HasPrefix(fmt.Sprint(v.Variables["receipt"]), "r-") {
		t.Fatalf("%+v", v)
	}
	// Without the CA the client refuses the server's certificate.
	if _, stderr, code := runJetbpm(t, env, "instances", "list"); code == 0 || !strings.Contains(stderr, "certificate") {
		t.Fatalf("a client without the CA connected (exit %d): %s", code, stderr)
	}
}
