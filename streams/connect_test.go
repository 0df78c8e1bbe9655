package streams_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// startFromConfigFile starts a listening server from a nats-server config file.
func startFromConfigFile(t *testing.T, conf string) *embedded.Server {
	t.Helper()
	file := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Port: -1, ConfigFile: file, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("start from config file: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func TestConnectUserPassword(t *testing.T) {
	srv := startFromConfigFile(t, `authorization { user: engine, password: "s3cret-pw" }`)
	url := srv.ClientURL()

	nc, err := streams.Connect(streams.ConnectConfig{URL: url, User: "engine", Password: "s3cret-pw"})
	if err != nil {
		t.Fatalf("connect with the right password: %v", err)
	}
	nc.Close()

	_, err = streams.Connect(streams.ConnectConfig{URL: url, User: "engine", Password: "wrong-pw"})
	if err == nil {
		t.Fatal("connected with a wrong password")
	}
	if !strings.Contains(err.Error(), url) || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("error should name the URL and never the password: %v", err)
	}

	inURL := strings.Replace(url, "nats://", "nats://engine:wrong-pw@", 1)
	_, err = streams.Connect(streams.ConnectConfig{URL: inURL})
	if err == nil || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("password in the URL leaked or accepted: %v", err)
	}
}

func TestConnectRejectsBadOptions(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent.pem")
	for _, tc := range []struct {
		name string
		cfg  streams.ConnectConfig
		want string
	}{
		{"two auth methods", streams.ConnectConfig{User: "a", Password: "b", Token: "c"}, "choose one"},
		{"cert without key", streams.ConnectConfig{TLSCert: "cert.pem"}, "both TLSCert and TLSKey"},
		{"key without cert", streams.ConnectConfig{TLSKey: "key.pem"}, "both TLSCert and TLSKey"},
		{"missing CA file", streams.ConnectConfig{TLSCA: absent}, "absent.pem"},
		{"unreachable", streams.ConnectConfig{URL: "nats://127.0.0.1:1"}, "nats://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := streams.Connect(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestConnectTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := streamstest.WritePKI(t, dir)
	srv := startFromConfigFile(t, fmt.Sprintf("tls { cert_file: %q, key_file: %q }", cert, key))
	url := srv.ClientURL()
	if !strings.HasPrefix(url, "tls://") {
		t.Fatalf("ClientURL of a TLS server = %q, want tls://", url)
	}

	nc, err := streams.Connect(streams.ConnectConfig{URL: url, TLSCA: ca})
	if err != nil {
		t.Fatalf("connect with the CA: %v", err)
	}
	if !nc.TLSRequired() {
		t.Error("connection is not TLS")
	}
	nc.Close()

	nc, err = streams.Connect(streams.ConnectConfig{URL: url, TLSInsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("connect skipping verification: %v", err)
	}
	nc.Close()

	plain := strings.Replace(url, "tls://", "nats://", 1)
	if _, err := streams.Connect(streams.ConnectConfig{URL: plain}); err == nil {
		t.Error("connected to a TLS server without trusting its certificate")
	}
}

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "nats://127.0.0.1:4222",
		"nats://a:4222, nats://b:4222":        "nats://a:4222,nats://b:4222",
		"nats://engine:s3cret@a:4222":         "nats://engine:xxxxx@a:4222",
		"nats://s3cret-token@a:4222,nats://b": "nats://xxxxx@a:4222,nats://b",
	} {
		if got := streams.RedactURLs(in); got != want {
			t.Errorf("RedactURLs(%q) = %q, want %q", in, got, want)
		}
	}
}
