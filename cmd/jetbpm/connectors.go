package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/connectors/rest"
	"github.com/jetbpm/jetbpm/workerkit"
)

// secretEnvPrefix names the environment variables a connector's
// {{secrets.NAME}} reads: JETBPM_SECRET_NAME. Only those: a model author
// must not read the engine's other environment.
const secretEnvPrefix = "JETBPM_SECRET_"

// connectorConcurrency is how many connector jobs run at once.
const connectorConcurrency = 32

// connectorFlags are serve's connector settings (docs/scripts-listeners-connectors.md §3).
type connectorFlags struct {
	kinds       string // "http", or ""
	hosts       string // the allow-list, comma separated
	maxResponse int64
}

func addConnectorFlags(fs *flag.FlagSet) *connectorFlags {
	c := &connectorFlags{}
	fs.StringVar(&c.kinds, "connectors", "", "run the built-in connector workers of the comma-separated `KINDS`: \"http\" runs Camunda 8's REST connector (io.camunda:http-json:1) and Camunda 7's http-connector; off by default, as they make outbound calls")
	fs.StringVar(&c.hosts, "connector-hosts", "", "the `HOSTS` connectors may call, comma separated: HOST (any port), HOST:PORT or *.DOMAIN; none when empty")
	fs.Int64Var(&c.maxResponse, "connector-max-response", rest.DefaultMaxResponse, "the largest response body, in `BYTES`, a connector takes; a larger one is an incident")
	return c
}

// check refuses kinds serve does not know and limits below one byte.
func (c *connectorFlags) check() error {
	for _, k := range c.list(c.kinds) {
		if k != "http" {
			return usageErrorf("serve", "--connectors %q: the connector kinds are: http", k)
		}
	}
	if c.maxResponse < 1 {
		return usageErrorf("serve", "--connector-max-response must be at least 1")
	}
	if c.kinds == "" && c.hosts != "" {
		return usageErrorf("serve", "--connector-hosts needs --connectors")
	}
	_, err := rest.New(rest.Config{Hosts: c.list(c.hosts)})
	if err != nil {
		return usageErrorf("serve", "--connector-hosts: %v", err)
	}
	return nil
}

func (c *connectorFlags) list(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// runConnectors starts the connector workers --connectors names, on nc,
// and returns the function that stops them: jobs in flight finish (or
// are redelivered) by ctx's deadline.
func runConnectors(c *connectorFlags, nc *nats.Conn, logger *slog.Logger) (stop func(context.Context), err error) {
	if c.kinds == "" {
		return func(context.Context) {}, nil
	}
	conn, err := rest.New(rest.Config{
		Hosts:       c.list(c.hosts),
		MaxResponse: c.maxResponse,
		Secrets:     func(name string) (string, bool) { return os.LookupEnv(secretEnvPrefix + name) },
	})
	if err != nil {
		return nil, err
	}
	w, err := workerkit.New(nc, workerkit.Options{Name: "jetbpm-connectors", Logger: logger.With("worker", "connectors")})
	if err != nil {
		return nil, err
	}
	w.Handle(rest.Type, conn.Run, workerkit.Concurrency(connectorConcurrency))
	w.Handle(rest.Camunda7Topic, conn.RunCamunda7, workerkit.Concurrency(connectorConcurrency))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	logger.Info("connectors running", "kinds", c.kinds, "hosts", c.hosts)
	return func(sctx context.Context) {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				logger.Error("connectors", "err", err)
			}
		case <-sctx.Done():
			logger.Warn("connectors did not stop in time; their jobs are redelivered")
		}
		conn.Close()
	}, nil
}
