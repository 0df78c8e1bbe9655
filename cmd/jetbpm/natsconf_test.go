package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

const natsConf = "../../nats.conf"

var rolePasswords = map[string]string{
	"engine": "engine-secret", "worker": "worker-secret",
	"integration": "integration-secret", "operator": "operator-secret",
}

// startConfServer runs nats.conf on a random port with a temporary store.
func startConfServer(t *testing.T) *server.Server {
	t.Helper()
	for role, pw := range rolePasswords {
		t.Setenv("JETBPM_"+strings.ToUpper(role)+"_PASSWORD", pw)
	}
	opts, err := server.ProcessConfigFile(natsConf)
	if err != nil {
		t.Fatal(err)
	}
	opts.Port, opts.StoreDir, opts.NoSigs, opts.NoLog = -1, t.TempDir(), true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server from nats.conf not ready")
	}
	return ns
}

func TestNatsConfNeedsPasswords(t *testing.T) {
	for role, pw := range rolePasswords {
		t.Setenv("JETBPM_"+strings.ToUpper(role)+"_PASSWORD", pw) // restored when the test ends
	}
	if err := os.Unsetenv("JETBPM_WORKER_PASSWORD"); err != nil {
		t.Fatal(err)
	}
	if _, err := server.ProcessConfigFile(natsConf); err == nil || !strings.Contains(err.Error(), "JETBPM_WORKER_PASSWORD") {
		t.Fatalf("nats.conf without JETBPM_WORKER_PASSWORD: err = %v, want it named", err)
	}
}

// roleConn is a connection as one role that collects async errors.
type roleConn struct {
	t    *testing.T
	nc   *nats.Conn
	errs chan error
}

func connectAs(t *testing.T, ns *server.Server, role string) *roleConn {
	t.Helper()
	c := &roleConn{t: t, errs: make(chan error, 64)}
	nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo(role, rolePasswords[role]),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { c.errs <- err }))
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	return c
}

// sentinel is a subject no role may publish to. A violation is reported
// asynchronously, in order: publishing the sentinel after an action and
// waiting for its violation tells whether the action was refused too.
const sentinel = "denied.sentinel"

// refused runs act and reports whether the server refused it with a
// permissions violation.
func (c *roleConn) refused(act func() error) bool {
	c.t.Helper()
	if err := act(); err != nil {
		c.t.Fatal(err)
	}
	if err := c.nc.Publish(sentinel, nil); err != nil {
		c.t.Fatal(err)
	}
	c.nc.Flush()
	violated := false
	for {
		select {
		case err := <-c.errs:
			if !errors.Is(err, nats.ErrPermissionViolation) {
				c.t.Fatalf("unexpected async error: %v", err)
			}
			if strings.Contains(err.Error(), `"`+sentinel+`"`) {
				return violated
			}
			violated = true
		case <-time.After(5 * time.Second):
			c.t.Fatal("no permissions violation for the sentinel subject")
		}
	}
}

func (c *roleConn) canPublish(subject string) bool {
	return !c.refused(func() error { return c.nc.Publish(subject, []byte("x")) })
}

func (c *roleConn) canSubscribe(subject string) bool {
	return !c.refused(func() error { _, err := c.nc.SubscribeSync(subject); return err })
}

func TestNatsConfRoles(t *testing.T) {
	ns := startConfServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The engine provisions everything and queues a job and a fact.
	engine := connectAs(t, ns, "engine")
	if err := streams.CheckServer(ctx, engine.nc); err != nil {
		t.Fatal(err)
	}
	ejs, _ := jetstream.New(engine.nc)
	if _, err := streams.Provision(ctx, ejs, streams.Config{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("engine provisions: %v", err)
	}
	if _, err := ejs.CreateOrUpdateConsumer(ctx, streams.JobsStream, jetstream.ConsumerConfig{
		Durable: streams.TopicConsumer("pay"), FilterSubject: streams.TopicFilter("pay"), AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := ejs.Publish(ctx, streams.JobSubject("pay", "j1"), []byte("job")); err != nil {
		t.Fatal(err)
	}
	fact := streams.FactSubject(streams.FactIncident, "order", "raised")
	if _, err := ejs.Publish(ctx, fact, []byte("fact")); err != nil {
		t.Fatal(err)
	}

	t.Run("worker", func(t *testing.T) {
		w := connectAs(t, ns, "worker")
		js, _ := jetstream.New(w.nc)
		cons, err := js.Consumer(ctx, streams.JobsStream, streams.TopicConsumer("pay"))
		if err != nil {
			t.Fatalf("worker looks up its topic consumer: %v", err)
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var job jetstream.Msg
		for m := range batch.Messages() {
			job = m
		}
		if job == nil || string(job.Data()) != "job" {
			t.Fatalf("worker fetched %v (batch err %v)", job, batch.Error())
		}
		if !w.refused(job.Ack) {
			t.Error("worker acked a job message: ARCH-3 says only the engine acks")
		}
		if !w.canPublish(streams.ReportSubject(0, "i1")) {
			t.Error("worker cannot publish a report")
		}
		for _, s := range []string{"$JS.ACK.x", "$KV.jetbpm-instances.i1", "$JS.API.STREAM.INFO.JETBPM_JOBS", "jetbpm.api.deploy", "jetbpm.evt.0.i1"} {
			if w.canPublish(s) {
				t.Errorf("worker may publish %s", s)
			}
		}
		if w.canSubscribe("jetbpm.job.>") {
			t.Error("worker may subscribe to jobs directly")
		}
	})

	t.Run("integration", func(t *testing.T) {
		in := connectAs(t, ns, "integration")
		js, _ := jetstream.New(in.nc)
		cons, err := js.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatalf("integration replays facts: %v", err)
		}
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil || m.Subject() != fact {
			t.Fatalf("integration read %v, %v; want the fact on %s", m, err, fact)
		}
		if !in.canSubscribe("jetbpm.fact.>") {
			t.Error("integration cannot subscribe to facts")
		}
		for _, s := range []string{"jetbpm.api.x", "jetbpm.rpt.0.i1", "$KV.jetbpm-instances.i1", "$JS.API.STREAM.DELETE.JETBPM_FACTS"} {
			if in.canPublish(s) {
				t.Errorf("integration may publish %s", s)
			}
		}
		if in.canSubscribe("jetbpm.evt.>") {
			t.Error("integration may subscribe to instance events")
		}
	})

	t.Run("operator", func(t *testing.T) {
		op := connectAs(t, ns, "operator")
		if !op.canPublish(streams.APISubject("deploy")) {
			t.Error("operator cannot call the engine API")
		}
		for _, s := range []string{"$KV.jetbpm-instances.i1", "$JS.ACK.x", "$JS.API.STREAM.LIST", "jetbpm.rpt.0.i1"} {
			if op.canPublish(s) {
				t.Errorf("operator may publish %s", s)
			}
		}
	})
}

// TestServeAgainstNatsConf runs `jetbpm serve --nats-url` as the engine
// user of nats.conf: the engine role is enough to check and provision.
func TestServeAgainstNatsConf(t *testing.T) {
	ns := startConfServer(t)
	p := startServe(t, []string{"JETBPM_NATS_PASSWORD=" + rolePasswords["engine"]},
		"--nats-url", ns.ClientURL(), "--user", "engine")
	rec := p.waitReady()
	if rec["nats_url"] != ns.ClientURL() {
		t.Errorf("ready record nats_url = %v, want %s", rec["nats_url"], ns.ClientURL())
	}
	p.stop()
}
