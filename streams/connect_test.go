package streams_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/streams"
)

// startFromConfigFile starts a listening server from a nats-server config file.
func startFromConfigFile(t *testing.T, conf string) *streams.Server {
	t.Helper()
	file := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := streams.StartServer(streams.ServerConfig{StoreDir: t.TempDir(), Port: -1, ConfigFile: file, Logger: quietLogger()})
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
	ca, cert, key := writeTestPKI(t, dir)
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

// writeTestPKI writes a CA and a server certificate for 127.0.0.1 as PEM
// files and returns their paths.
func writeTestPKI(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "jetbpm test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caTmpl, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server-key.pem", "EC PRIVATE KEY", keyDER)
}
