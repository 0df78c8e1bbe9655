package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	"tasklist": "tasklist-secret",
	// The per-topic worker of the commented example (topicWorkerConf).
	"worker_payments": "payments-secret",
}

// roleInboxes are the inbox prefixes nats.conf gives users; the engine
// uses the default _INBOX.
var roleInboxes = map[string]string{
	"worker": "_INBOX.worker", "worker_payments": "_INBOX.worker_payments",
	"integration": "_INBOX.integration", "operator": "_INBOX.operator",
	"tasklist": "_INBOX.tasklist",
}

// startConfServer runs nats.conf on a random port with a temporary store.
func startConfServer(t *testing.T) *server.Server { return startConfServerFrom(t, natsConf) }

func startConfServerFrom(t *testing.T, conf string) *server.Server {
	t.Helper()
	for role, pw := range rolePasswords {
		t.Setenv("JETBPM_"+strings.ToUpper(role)+"_PASSWORD", pw)
	}
	opts, err := server.ProcessConfigFile(conf)
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
	opts := []nats.Option{nats.UserInfo(role, rolePasswords[role]),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { c.errs <- err })}
	if prefix, ok := roleInboxes[role]; ok {
		opts = append(opts, nats.CustomInboxPrefix(prefix))
	}
	nc, err := nats.Connect(ns.ClientURL(), opts...)
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

// provisionAsEngine provisions the server as the engine user, creates the
// consumers of topics and queues one job ("job <topic>") on each, as the
// engine does on deploy and enqueue.
func provisionAsEngine(ctx context.Context, t *testing.T, ns *server.Server, topics ...string) jetstream.JetStream {
	t.Helper()
	engine := connectAs(t, ns, "engine")
	if err := streams.CheckServer(ctx, engine.nc); err != nil {
		t.Fatal(err)
	}
	ejs, _ := jetstream.New(engine.nc)
	if _, err := streams.Provision(ctx, ejs, streams.Config{Partitions: 2, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("engine provisions: %v", err)
	}
	for _, topic := range topics {
		if err := streams.EnsureTopic(ctx, ejs, topic, time.Minute, 0, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ejs.Publish(ctx, streams.JobSubject(topic, "j1"), []byte("job "+topic)); err != nil {
			t.Fatal(err)
		}
	}
	return ejs
}

// fetchJob fetches one job as a worker does: consumer info, then a pull.
func fetchJob(ctx context.Context, t *testing.T, js jetstream.JetStream, topic string) jetstream.Msg {
	t.Helper()
	cons, err := js.Consumer(ctx, streams.JobsStream, streams.TopicConsumer(topic))
	if err != nil {
		t.Fatalf("worker looks up the consumer of topic %s: %v", topic, err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var job jetstream.Msg
	for m := range batch.Messages() {
		job = m
	}
	if job == nil || string(job.Data()) != "job "+topic {
		t.Fatalf("worker fetched %v from topic %s (batch err %v)", job, topic, batch.Error())
	}
	return job
}

// checkWorkerLimits asserts what no worker user may do: above all, ack a
// job message (only the engine does, after fencing). The worker fetched
// job from topic.
func checkWorkerLimits(ctx context.Context, t *testing.T, w *roleConn, js jetstream.JetStream, job jetstream.Msg, topic string) {
	t.Helper()
	if !w.refused(job.Ack) {
		t.Error("worker acked a job message: only the engine may ack one, after fencing")
	}
	// A report is a JetStream publish: stored, its PubAck on the worker's inbox.
	if ack, err := js.Publish(ctx, streams.ReportSubject(0, topic, "i1"), []byte("{}")); err != nil || ack.Stream != streams.ReportsStream {
		t.Errorf("worker publishes a report: %v, %v", ack, err)
	}
	for _, s := range []string{
		"$JS.ACK.x", job.Reply(),
		"$KV.jetbpm-instances.i1",
		"$JS.API.DIRECT.GET.KV_jetbpm-instances.$KV.jetbpm-instances.i1",
		"$JS.API.STREAM.MSG.GET.KV_jetbpm-instances",
		"$JS.API.STREAM.INFO.JETBPM_JOBS",
		"$JS.API.STREAM.PURGE.JETBPM_JOBS",
		"$JS.API.CONSUMER.CREATE.JETBPM_JOBS",
		"$JS.API.CONSUMER.CREATE.JETBPM_JOBS.topic-x.jetbpm.job.x.>",
		"$JS.API.CONSUMER.DURABLE.CREATE.JETBPM_JOBS.topic-x",
		"$JS.API.CONSUMER.DELETE.JETBPM_JOBS.topic-pay",
		"$JS.API.CONSUMER.MSG.NEXT.JETBPM_EVENTS.partition-0",
		"$JS.API.CONSUMER.INFO.JETBPM_EVENTS.partition-0",
		"$JS.API.CONSUMER.MSG.NEXT.JETBPM_FACTS.x",
		"jetbpm.job.pay.j2", "jetbpm.evt.0.i1", "jetbpm.tmr.0.i1.t", "jetbpm.fact.instance.p.completed",
		"jetbpm.api.deploy", "jetbpm.api.start",
		"_INBOX.someone.else",
	} {
		if w.canPublish(s) {
			t.Errorf("worker may publish %s", s)
		}
	}
	for _, s := range []string{"jetbpm.fact.>", "jetbpm.job.>", "jetbpm.rpt.>", "jetbpm.evt.>", "$KV.>", "_INBOX.>", "_INBOX.someone.>"} {
		if w.canSubscribe(s) {
			t.Errorf("worker may subscribe to %s", s)
		}
	}
	// The same through the JetStream API: each call fails (times out on the
	// refused request) and the server reports a violation.
	short := func(call func(context.Context) error) func() error {
		return func() error {
			c, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if call(c) == nil {
				t.Error("a refused JetStream call succeeded")
			}
			return nil
		}
	}
	for name, call := range map[string]func(context.Context) error{
		"read a checkpoint": func(c context.Context) error { _, err := js.KeyValue(c, streams.InstancesBucket); return err },
		"create a consumer": func(c context.Context) error {
			_, err := js.CreateConsumer(c, streams.JobsStream, jetstream.ConsumerConfig{FilterSubject: streams.JobsSubjects})
			return err
		},
		"delete a consumer": func(c context.Context) error {
			return js.DeleteConsumer(c, streams.JobsStream, streams.TopicConsumer("pay"))
		},
	} {
		if !w.refused(short(call)) {
			t.Errorf("worker may %s", name)
		}
	}
}

func TestNatsConfRoles(t *testing.T) {
	ns := startConfServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The engine provisions everything and queues a job and a fact.
	ejs := provisionAsEngine(ctx, t, ns, "pay")
	fact := streams.FactSubject(streams.FactIncident, "order", "raised")
	if _, err := ejs.Publish(ctx, fact, []byte("fact")); err != nil {
		t.Fatal(err)
	}

	t.Run("worker", func(t *testing.T) {
		w := connectAs(t, ns, "worker")
		js, _ := jetstream.New(w.nc)
		job := fetchJob(ctx, t, js, "pay")
		checkWorkerLimits(ctx, t, w, js, job, "pay")
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
		for _, s := range []string{"jetbpm.api.x", streams.ReportSubject(0, "pay", "i1"), "$KV.jetbpm-instances.i1", "$JS.API.STREAM.DELETE.JETBPM_FACTS"} {
			if in.canPublish(s) {
				t.Errorf("integration may publish %s", s)
			}
		}
		if in.canSubscribe("jetbpm.evt.>") {
			t.Error("integration may subscribe to instance events")
		}
		if !in.canPublish("jetbpm.m.pub.order-paid.o-17") {
			t.Error("integration cannot publish a BPMN message")
		}
		if !in.canPublish(streams.SignalSubject("order-cancelled")) {
			t.Error("integration cannot broadcast a signal")
		}
		for _, s := range []string{streams.KVSubject(streams.SignalsBucket, streams.SignalKey("x", "i1", "w")), "jetbpm.s.other.x", "jetbpm.ts.p"} {
			if in.canPublish(s) {
				t.Errorf("integration may publish %s", s)
			}
		}
		for _, s := range []string{"jetbpm.m.sub.order-paid.o-17", "jetbpm.m.rej.order-paid.o-17", "jetbpm.mp.0.pub.order-paid.o-17"} {
			if in.canPublish(s) {
				t.Errorf("integration may publish the engine's message command %s", s)
			}
		}
	})

	t.Run("tasklist", func(t *testing.T) {
		tl := connectAs(t, ns, "tasklist")
		for _, op := range []string{"task.list", "task.get", "task.form", "task.claim", "task.complete"} {
			if !tl.canPublish(streams.APISubject(op)) {
				t.Errorf("tasklist cannot call %s", op)
			}
		}
		for _, s := range []string{streams.APISubject("deploy"), streams.APISubject("incident.retry"), streams.APISubject("instance.cancel"),
			"$KV.jetbpm-tasks.x", "$JS.ACK.x", "jetbpm.m.pub.x.y"} {
			if tl.canPublish(s) {
				t.Errorf("tasklist may publish %s", s)
			}
		}
		if tl.canSubscribe("jetbpm.fact.>") {
			t.Error("tasklist may read facts")
		}
	})

	t.Run("operator", func(t *testing.T) {
		op := connectAs(t, ns, "operator")
		if !op.canPublish(streams.APISubject("deploy")) {
			t.Error("operator cannot call the engine API")
		}
		for _, s := range []string{"$KV.jetbpm-instances.i1", "$JS.ACK.x", "$JS.API.STREAM.LIST", streams.ReportSubject(0, "pay", "i1")} {
			if op.canPublish(s) {
				t.Errorf("operator may publish %s", s)
			}
		}
	})
}

// topicWorkerConf writes nats.conf with its commented per-topic worker
// example (user worker_payments) enabled, and returns its path.
func topicWorkerConf(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(natsConf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	user := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "#   user: worker_payments" })
	if user < 0 {
		t.Fatal("nats.conf has no commented worker_payments example")
	}
	start := user
	for start > 0 && strings.TrimSpace(lines[start]) != "# {" {
		start--
	}
	indent := lines[start][:strings.Index(lines[start], "#")]
	end := user
	for end < len(lines) && lines[end] != indent+"# }" {
		end++
	}
	if start == 0 || end == len(lines) {
		t.Fatal("cannot find the braces of the worker_payments example in nats.conf")
	}
	for i := start; i <= end; i++ {
		l := lines[i]
		hash := strings.Index(l, "#")
		lines[i] = l[:hash] + strings.TrimPrefix(l[hash+1:], " ")
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNatsConfTopicWorker enables the per-topic worker example of
// nats.conf: worker_payments fetches from topic-payments only.
func TestNatsConfTopicWorker(t *testing.T) {
	conf := topicWorkerConf(t)
	if data, err := os.ReadFile(conf); err != nil || !strings.Contains(string(data), `"`+streams.TopicReports("payments")+`"`) {
		t.Fatalf("worker_payments is not allowed %s, the reports of its topic (%v)", streams.TopicReports("payments"), err)
	}
	ns := startConfServerFrom(t, conf)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	provisionAsEngine(ctx, t, ns, "payments", "pay")

	w := connectAs(t, ns, "worker_payments")
	js, _ := jetstream.New(w.nc)
	job := fetchJob(ctx, t, js, "payments")
	for _, s := range []string{
		"$JS.API.CONSUMER.MSG.NEXT.JETBPM_JOBS.topic-pay",
		"$JS.API.CONSUMER.INFO.JETBPM_JOBS.topic-pay",
		// Reports for the jobs of another topic, on any partition, and
		// subjects that name no topic.
		streams.ReportSubject(0, "pay", "i1"),
		streams.ReportSubject(1, "pay", "i1"),
		streams.ReportSubject(0, "payments-eu", "i1"),
		"jetbpm.rpt.0.i1",
		"jetbpm.rpt.0.payments",
	} {
		if w.canPublish(s) {
			t.Errorf("worker_payments may publish %s", s)
		}
	}
	for _, s := range []string{streams.ReportSubject(0, "payments", "i1"), streams.ReportSubject(1, "payments", "i.2")} {
		if !w.canPublish(s) {
			t.Errorf("worker_payments may not publish %s", s)
		}
	}
	// A report for topic pay through JetStream: refused, so never stored.
	pubCtx, cancelPub := context.WithTimeout(ctx, time.Second)
	defer cancelPub()
	if !w.refused(func() error {
		if ack, err := js.Publish(pubCtx, streams.ReportSubject(0, "pay", "i1"), []byte("{}")); err == nil {
			t.Errorf("worker_payments stored a report for topic pay: %+v", ack)
		}
		return nil
	}) {
		t.Error("no permissions violation for a report for topic pay")
	}
	if w.canSubscribe("_INBOX.worker.>") {
		t.Error("worker_payments may read the inboxes of the other workers")
	}
	checkWorkerLimits(ctx, t, w, js, job, "payments")
}

// TestNatsConfRepliesStayWithTheirRole: every role but the engine reads
// replies on its own inbox prefix only, so a reply to one role (an API
// answer, a job fetched, a checkpoint read) reaches no other.
func TestNatsConfRepliesStayWithTheirRole(t *testing.T) {
	ns := startConfServerFrom(t, topicWorkerConf(t))
	roles := []string{"worker", "worker_payments", "integration", "operator", "tasklist"}
	conns := map[string]*roleConn{}
	for _, role := range roles {
		conns[role] = connectAs(t, ns, role)
	}
	for _, role := range roles {
		c := conns[role]
		if !c.canSubscribe(roleInboxes[role] + ".x.>") {
			t.Errorf("%s may not subscribe to its own inboxes", role)
		}
		for _, s := range []string{"_INBOX.>", "_INBOX.*.>", "_INBOX.x", "_INBOX.engine.>"} {
			if c.canSubscribe(s) {
				t.Errorf("%s may subscribe to %s", role, s)
			}
		}
		for _, other := range roles {
			if other != role && c.canSubscribe(roleInboxes[other]+".>") {
				t.Errorf("%s may subscribe to the inboxes of %s", role, other)
			}
		}
	}

	// The engine answers an API request of the operator; the others try to
	// listen in on the operator's inboxes.
	engine := connectAs(t, ns, "engine")
	if _, err := engine.nc.Subscribe(streams.APISubject("echo"), func(m *nats.Msg) { _ = m.Respond([]byte("for the operator")) }); err != nil {
		t.Fatal(err)
	}
	if err := engine.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	listeners := map[string]*nats.Subscription{}
	for _, role := range roles[:3] {
		c := conns[role]
		c.refused(func() error {
			sub, err := c.nc.SubscribeSync("_INBOX.operator.>")
			listeners[role] = sub
			return err
		})
	}
	reply, err := conns["operator"].nc.Request(streams.APISubject("echo"), nil, 5*time.Second)
	if err != nil || string(reply.Data) != "for the operator" {
		t.Fatalf("operator request: %v, %v", reply, err)
	}
	// The reply was routed to every allowed subscriber before the
	// operator got it; a flush brings anything queued for a listener.
	for role, sub := range listeners {
		if err := conns[role].nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := sub.Pending(); n != 0 {
			t.Errorf("%s received the operator's reply", role)
		}
	}
}

// TestNatsConfEndToEnd runs everything as the roles of nats.conf: jetbpm
// serve as the engine, the client commands as the operator and jetbpm work
// as the worker confined to topic payments (worker_payments); a payment
// completes.
func TestNatsConfEndToEnd(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the worker script is a shell script")
	}
	ns := startConfServerFrom(t, topicWorkerConf(t))
	url := ns.ClientURL()
	serve := startServe(t, []string{"JETBPM_NATS_PASSWORD=" + rolePasswords["engine"]}, "--nats-url", url, "--user", "engine")
	serve.waitReady()
	operator := []string{"JETBPM_NATS_URL=" + url, "JETBPM_NATS_USER=operator", "JETBPM_NATS_PASSWORD=" + rolePasswords["operator"]}
	c := client{t: t, env: operator}
	dir := t.TempDir()
	c.ok("deploy", writeFile(t, dir, "payments.bpmn",
		strings.Replace(workBPMN, "%PROCESSES%", strings.ReplaceAll(simpleProcess, "TOPIC", "payments"), 1)))
	pay := writeScript(t, dir, "pay.sh", `echo '{"receipt": "r-1"}'`)
	startWork(t, []string{"JETBPM_NATS_URL=" + url, "JETBPM_NATS_USER=worker_payments", "JETBPM_NATS_PASSWORD=" + rolePasswords["worker_payments"]},
		"--topic", "payments", "--", pay)
	id := strings.TrimSpace(c.ok("start", "payments"))
	if v := c.finished(id); v.Status != "completed" || v.Variables["receipt"] != "r-1" {
		t.Fatalf("instance = %+v, want completed with the worker's receipt", v)
	}
	// The operator's replies come to _INBOX.operator: an inbox prefix the
	// role may not read gets no answer.
	checkFails(t, operator, 1, "did not answer within", "instances", "list", "--timeout", "2s", "--inbox-prefix", "_INBOX.worker")
	c.ok("instances", "list", "--inbox-prefix", "_INBOX.operator")
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
