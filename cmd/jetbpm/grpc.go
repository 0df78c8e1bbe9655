package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8/zeebegrpc"
)

// serveGRPC serves the Zeebe gateway protocol on ln (o.grpc) for Camunda
// 8 clients (docs/camunda8-migration.md), with --http's TLS certificate
// and authentication. It returns the function that stops the server (its
// calls in flight end first, within ctx) and the address it listens on.
func serveGRPC(o serveOptions, ln net.Listener, eng *engine.Engine, nc *nats.Conn, logger *slog.Logger) (stop func(context.Context), addr string, err error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, "", fmt.Errorf("--grpc: %w", err)
	}
	host, port, _ := net.SplitHostPort(o.grpc)
	var p int32
	fmt.Sscan(port, &p)
	gw, err := zeebegrpc.New(eng, js, zeebegrpc.Options{Host: host, Port: p, Logger: logger})
	if err != nil {
		return nil, "", err
	}
	opts := zeebegrpc.Authenticate(o.auth)
	if o.httpTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.httpTLSCert, o.httpTLSKey)
		if err != nil {
			return nil, "", fmt.Errorf("--http-tls-cert, --http-tls-key: %w", err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	}
	srv := grpc.NewServer(opts...)
	gw.Register(srv)
	go func() {
		if err := srv.Serve(ln); err != nil {
			logger.Error("grpc server", "err", err)
		}
	}()
	return func(ctx context.Context) {
		done := make(chan struct{})
		go func() { srv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			srv.Stop()
		}
		gw.Close()
	}, ln.Addr().String(), nil
}
