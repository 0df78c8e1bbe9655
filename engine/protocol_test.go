package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// The tests in this file drive the engine with a worker written from
// docs/worker-protocol.md alone: core NATS requests and JSON, no JetStream
// client library and none of the jobs package's types. They run against an
// embedded server and against a server started from nats.conf, where the
// worker has the worker role's real permissions.

// wireJob, wireVerdict: the JSON of the protocol, as the document names it.
type wireJob struct {
	ID             string            `json:"id"`
	Topic          string            `json:"topic"`
	InstanceID     string            `json:"instanceId"`
	ProcessID      string            `json:"processId"`
	NodeID         string            `json:"nodeId"`
	Input          map[string]any    `json:"input"`
	Headers        map[string]string `json:"headers"`
	ReportTo       string            `json:"reportTo"`
	LockDurationMs int64             `json:"lockDurationMs"`
	Policy         map[string]any    `json:"policy"`
}

type wireVerdict struct {
	JobID         string     `json:"jobId"`
	Kind          string     `json:"kind"`
	Accepted      bool       `json:"accepted"`
	Reason        string     `json:"reason"`
	LockExpiresAt *time.Time `json:"lockExpiresAt"`
}

// protoSetup is a server with a running engine, and a way to connect as a
// worker.
type protoSetup struct {
	eng        *engine.Engine
	partitions int
	worker     func(t *testing.T) *nats.Conn
	// admin may do what the engine does (publish jobs, read streams).
	admin *nats.Conn
}

// protoSetups are the servers every protocol test runs against.
var protoSetups = []struct {
	name  string
	start func(t *testing.T) protoSetup
}{
	{"embedded", func(t *testing.T) protoSetup {
		env := streamstest.Start(t)
		return protoSetup{eng: openEngine(t, env, nil), partitions: env.Layout.Partitions,
			worker: func(t *testing.T) *nats.Conn { return env.NewConn(t) }, admin: env.NewConn(t)}
	}},
	{"nats.conf", startNatsConfSetup},
}

// startNatsConfSetup runs ../nats.conf, provisions it and opens the engine
// as the engine user; workers connect as the worker user.
func startNatsConfSetup(t *testing.T) protoSetup {
	t.Helper()
	opts, err := server.ProcessConfigFile("../nats.conf")
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
	connect := func(t *testing.T, user string, opts ...nats.Option) *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL(), append(opts, nats.UserInfo(user, user+"-secret"))...)
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	enc := connect(t, "engine")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, _ := jetstream.New(enc)
	layout, err := streams.Provision(ctx, js, streams.Config{Partitions: 4, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(ctx, enc, engine.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := eng.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return protoSetup{eng: eng, partitions: layout.Partitions, admin: enc, worker: func(t *testing.T) *nats.Conn {
		return connect(t, "worker", nats.CustomInboxPrefix("_INBOX.worker"))
	}}
}

// runProto runs test against every setup.
func runProto(t *testing.T, test func(t *testing.T, s protoSetup)) {
	for _, setup := range protoSetups {
		t.Run(setup.name, func(t *testing.T) { test(t, setup.start(t)) })
	}
}

// protoWorker is one worker process.
type protoWorker struct {
	t        *testing.T
	nc       *nats.Conn
	name     string
	consumer string
}

func newProtoWorker(t *testing.T, s protoSetup, name, topic string) *protoWorker {
	return &protoWorker{t: t, nc: s.worker(t), name: name, consumer: "topic-" + streams.Token(topic)}
}

// protoDelivery is one delivery of a job: the message, its JSON, and the
// delivery count read from the reply subject.
type protoDelivery struct {
	msg   *nats.Msg
	job   wireJob
	count int
	sent  map[string]int // reports sent per kind, for the message id
}

// pull asks the topic's consumer for one job, waiting up to wait; it
// returns nil on a 404/408 status (no job).
func (w *protoWorker) pull(wait time.Duration) *protoDelivery {
	w.t.Helper()
	req := fmt.Sprintf(`{"batch":1,"expires":%d}`, wait.Nanoseconds())
	m, err := w.nc.Request("$JS.API.CONSUMER.MSG.NEXT.JETBPM_JOBS."+w.consumer, []byte(req), wait+5*time.Second)
	if err != nil {
		w.t.Fatalf("%s: pull: %v", w.name, err)
	}
	if status := m.Header.Get("Status"); status != "" {
		if status == "404" || status == "408" {
			return nil
		}
		w.t.Fatalf("%s: pull: status %s %s", w.name, status, m.Header.Get("Description"))
	}
	d := &protoDelivery{msg: m, sent: map[string]int{}}
	if err := json.Unmarshal(m.Data, &d.job); err != nil {
		w.t.Fatalf("%s: job body: %v", w.name, err)
	}
	// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
	tokens := strings.Split(m.Reply, ".")
	if len(tokens) != 9 || tokens[2] != streams.JobsStream || tokens[3] != w.consumer {
		w.t.Fatalf("%s: reply subject %q", w.name, m.Reply)
	}
	if d.count, err = strconv.Atoi(tokens[4]); err != nil {
		w.t.Fatal(err)
	}
	if want := "jetbpm.job." + strings.TrimPrefix(w.consumer, "topic-") + "." + streams.Token(d.job.ID); m.Subject != want {
		w.t.Errorf("job subject %s, want %s", m.Subject, want)
	}
	return d
}

// fetch pulls one job, failing the test if none comes within 10 s.
func (w *protoWorker) fetch() *protoDelivery {
	w.t.Helper()
	d := w.pull(10 * time.Second)
	if d == nil {
		w.t.Fatalf("%s: no job within 10s", w.name)
	}
	return d
}

// report sends a message of kind for d, with the protocol's fields plus
// extra, and returns the verdict.
func (w *protoWorker) report(d *protoDelivery, kind string, extra map[string]any) wireVerdict {
	w.t.Helper()
	body := map[string]any{"kind": kind, "jobId": d.job.ID, "delivery": d.msg.Reply, "worker": w.name}
	for k, v := range extra {
		body[k] = v
	}
	// Nats-Msg-Id <jobId>:<delivery>:<kind>[:n]: extends are numbered, and
	// so is any other kind sent again as a new message.
	d.sent[kind]++
	msgID := fmt.Sprintf("%s:%d:%s", d.job.ID, d.count, kind)
	if n := d.sent[kind]; n > 1 || kind == "extend" {
		msgID += ":" + strconv.Itoa(n)
	}
	v, ok := w.send(d.job.ReportTo, body, msgID)
	if !ok {
		w.t.Fatalf("%s: no verdict for %s", w.name, kind)
	}
	return v
}

// send publishes body (a map, or raw bytes) to subject with JetStream —
// a request whose reply is the PubAck — and waits for a verdict on a fresh
// inbox named in replyTo. ok is false when no verdict came within 3 s.
func (w *protoWorker) send(subject string, body any, msgID string) (v wireVerdict, ok bool) {
	w.t.Helper()
	inbox := w.nc.NewInbox()
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		w.t.Fatal(err)
	}
	defer sub.Unsubscribe()
	var data []byte
	switch b := body.(type) {
	case []byte:
		data = b
	case map[string]any:
		b["replyTo"] = inbox
		data, _ = json.Marshal(b)
	}
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set("Nats-Msg-Id", msgID)
	ack, err := w.nc.RequestMsg(m, 5*time.Second)
	if err != nil {
		w.t.Fatalf("%s: publish to %s: %v", w.name, subject, err)
	}
	var pubAck struct {
		Stream string `json:"stream"`
		Error  *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ack.Data, &pubAck); err != nil || pubAck.Error != nil || pubAck.Stream != streams.ReportsStream {
		w.t.Fatalf("%s: PubAck %s (%v)", w.name, ack.Data, err)
	}
	reply, err := sub.NextMsg(3 * time.Second)
	if err != nil {
		return wireVerdict{}, false
	}
	if err := json.Unmarshal(reply.Data, &v); err != nil {
		w.t.Fatal(err)
	}
	return v, true
}

func wantAccepted(t *testing.T, v wireVerdict, kind string) {
	t.Helper()
	if !v.Accepted || v.Kind != kind {
		t.Fatalf("%s: verdict %+v, want accepted", kind, v)
	}
}

func wantRefused(t *testing.T, v wireVerdict, kind, reason string) {
	t.Helper()
	if v.Accepted || v.Kind != kind || !strings.Contains(v.Reason, reason) {
		t.Fatalf("%s: verdict %+v, want refused with %q", kind, v, reason)
	}
}

// deployWorkerTask deploys process id: start → external task "charge" on
// topic → end, and starts an instance with vars.
func deployWorkerTask(t *testing.T, s protoSetup, id, topic string, vars map[string]any, opts ...model.WorkerOption) string {
	t.Helper()
	ctx := context.Background()
	p := build(t, model.NewBuilder(id).StartEvent("s").
		ServiceTask("charge", "", model.WithWorker(topic, opts...)).
		EndEvent("e").Sequence("s", "charge", "e"))
	if _, err := s.eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	inst, err := s.eng.Start(ctx, id, vars)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestWorkerProtocolLifecycle: fetch, the job's fields, extend at half the
// lock, complete, and the answers to a repeated report.
func TestWorkerProtocolLifecycle(t *testing.T) {
	runProto(t, func(t *testing.T, s protoSetup) {
		const lock = 2 * time.Second
		topic := "pay.eu" // escaped: consumer topic-pay=2Eeu
		id := deployWorkerTask(t, s, "proto", topic, map[string]any{"amount": 42},
			model.WithLockDuration(lock), model.WithMaxLockDuration(time.Minute),
			model.WithHeaders(map[string]string{"region": "eu"}))
		w := newProtoWorker(t, s, "w1", topic)
		if w.consumer != "topic-pay=2Eeu" {
			t.Fatalf("consumer %s", w.consumer)
		}
		fetched := time.Now()
		d := w.fetch()
		j := d.job
		// jetbpm.rpt.<partition>.<token(topic)>.<instance>
		wantReport := fmt.Sprintf("jetbpm.rpt.%d.pay=2Eeu.%s", streams.PartitionOf(id, s.partitions), id)
		if d.count != 1 || !strings.HasPrefix(j.ID, id+"/charge/") || j.Topic != topic || j.InstanceID != id ||
			j.ProcessID != "proto" || j.NodeID != "charge" || j.Input["amount"] != 42.0 || j.Headers["region"] != "eu" ||
			j.ReportTo != wantReport || j.LockDurationMs != 2000 {
			t.Fatalf("delivery %d of job %+v", d.count, j)
		}
		if j.Policy["trust"] != "workerTrusted" || j.Policy["lockDurationMs"] != 2000.0 || j.Policy["maxLockDurationMs"] != 60000.0 ||
			j.Policy["retry"].(map[string]any)["maxAttempts"] != 3.0 {
			t.Fatalf("policy %v", j.Policy)
		}
		if d.msg.Header.Get("Jetbpm-Job") != j.ID || d.msg.Header.Get("Jetbpm-Instance") != id {
			t.Errorf("job headers %v", d.msg.Header)
		}

		// Extend at about half the lock, twice: the job outlives its first lock.
		for range 2 {
			time.Sleep(time.Until(fetched.Add(lock / 2)))
			v := w.report(d, "extend", nil)
			wantAccepted(t, v, "extend")
			if v.LockExpiresAt == nil || v.LockExpiresAt.Before(time.Now().Add(lock/2)) {
				t.Fatalf("extend: lockExpiresAt %v", v.LockExpiresAt)
			}
			fetched = time.Now()
		}
		other := newProtoWorker(t, s, "w2", topic)
		if d2 := other.pull(500 * time.Millisecond); d2 != nil {
			t.Fatalf("job redelivered while its lock was extended: delivery %d", d2.count)
		}

		wantAccepted(t, w.report(d, "complete", map[string]any{"output": map[string]any{"receipt": "r-1"}}), "complete")
		view := waitDone(t, s.eng, id)
		if view.Status != instance.Completed || view.Variables["receipt"] != "r-1" {
			t.Fatalf("%+v", view)
		}
		// The same complete again, with the same message id: the events
		// stream drops it (PubAck duplicate) and no second verdict comes.
		if _, ok := w.send(j.ReportTo, map[string]any{"kind": "complete", "jobId": j.ID, "delivery": d.msg.Reply},
			fmt.Sprintf("%s:%d:complete", j.ID, d.count)); ok {
			t.Error("a duplicate report got a verdict")
		}
		// With a new id it is decided again, and refused: the job is over.
		wantRefused(t, w.report(d, "complete", nil), "complete", "unknown or finished job")
	})
}

// TestWorkerProtocolStaleHolder: a worker whose lock expired while another
// took the job and checked in is refused on every message; the new holder
// completes.
func TestWorkerProtocolStaleHolder(t *testing.T) {
	t.Parallel()
	runProto(t, func(t *testing.T, s protoSetup) {
		id := deployWorkerTask(t, s, "stale", "payments", nil, model.WithLockDuration(time.Second))
		a := newProtoWorker(t, s, "a", "payments")
		b := newProtoWorker(t, s, "b", "payments")
		da := a.fetch() // a hangs: its lock expires
		if da.count != 1 {
			t.Fatalf("first delivery count %d", da.count)
		}
		db := b.fetch()
		if db.count != 2 {
			t.Fatalf("redelivery count %d", db.count)
		}
		// Until b checks in the engine knows of no later delivery: a's
		// extend is still granted.
		wantAccepted(t, a.report(da, "extend", nil), "extend")
		wantAccepted(t, b.report(db, "checkin", nil), "checkin")

		wantRefused(t, a.report(da, "complete", map[string]any{"output": map[string]any{"by": "a"}}), "complete", "stale delivery 1")
		wantRefused(t, a.report(da, "fail", map[string]any{"code": "E1", "message": "boom"}), "fail", "stale delivery 1")
		wantRefused(t, a.report(da, "extend", nil), "extend", "stale delivery 1")

		wantAccepted(t, b.report(db, "complete", map[string]any{"output": map[string]any{"by": "b"}}), "complete")
		view := waitDone(t, s.eng, id)
		if view.Status != instance.Completed || view.Variables["by"] != "b" {
			t.Fatalf("%+v", view)
		}
		// The engine's ack removed the job although b's lock had run out.
		if d := newProtoWorker(t, s, "c", "payments").pull(1500 * time.Millisecond); d != nil {
			t.Fatalf("job still queued after completion: delivery %d", d.count)
		}
	})
}

// TestWorkerProtocolCheckInExhausts: with one attempt, the check-in of the
// second delivery is refused and the task fails; the worker must not run it.
func TestWorkerProtocolCheckInExhausts(t *testing.T) {
	t.Parallel()
	runProto(t, func(t *testing.T, s protoSetup) {
		id := deployWorkerTask(t, s, "poison", "payments", nil,
			model.WithLockDuration(time.Second), model.WithRetryPolicy(jobs.NoRetrySpec()))
		w := newProtoWorker(t, s, "w", "payments")
		w.fetch() // dies
		d := w.fetch()
		wantRefused(t, w.report(d, "checkin", nil), "checkin", "retries exhausted after 1 attempts")
		waitIncident(t, s.eng, id)
	})
}

// TestWorkerProtocolExtendCap: past maxLockDuration an extend is refused.
func TestWorkerProtocolExtendCap(t *testing.T) {
	runProto(t, func(t *testing.T, s protoSetup) {
		id := deployWorkerTask(t, s, "capped", "payments", nil,
			model.WithLockDuration(time.Second), model.WithMaxLockDuration(2*time.Second))
		a := newProtoWorker(t, s, "a", "payments")
		da := a.fetch()
		// The engine assumes the lock began one lock before its first news
		// of the delivery: 1 s assumed + 1 s renewed = the 2 s cap.
		wantAccepted(t, a.report(da, "extend", nil), "extend")
		time.Sleep(300 * time.Millisecond)
		wantRefused(t, a.report(da, "extend", nil), "extend", "maxLockDuration 2s reached")

		// a stops; the job comes back, the next holder checks in and completes.
		b := newProtoWorker(t, s, "b", "payments")
		db := b.fetch()
		if db.count != 2 {
			t.Fatalf("redelivery count %d", db.count)
		}
		wantAccepted(t, b.report(db, "checkin", nil), "checkin")
		wantRefused(t, a.report(da, "complete", nil), "complete", "stale delivery 1")
		wantAccepted(t, b.report(db, "complete", nil), "complete")
		if view := waitDone(t, s.eng, id); view.Status != instance.Completed {
			t.Fatalf("%+v", view)
		}
	})
}

// TestWorkerProtocolMalformedReports: malformed messages are refused and
// change nothing; the holder then completes its delivery 1.
func TestWorkerProtocolMalformedReports(t *testing.T) {
	t.Parallel()
	runProto(t, func(t *testing.T, s protoSetup) {
		id := deployWorkerTask(t, s, "malformed", "payments", nil, model.WithLockDuration(10*time.Second))
		w := newProtoWorker(t, s, "w", "payments")
		d := w.fetch()
		j := d.job
		tokens := strings.Split(d.msg.Reply, ".")
		seq, _ := strconv.Atoi(tokens[5])
		forged := func(stream, consumer string, seq int) string {
			return fmt.Sprintf("$JS.ACK.%s.%s.1.%d.1.%s.0", stream, consumer, seq, tokens[7])
		}

		// Not JSON: the engine cannot read replyTo, so no verdict comes.
		if _, ok := w.send(j.ReportTo, []byte(`{"kind":"complete","jobId":"`+j.ID+`","replyTo":"`+w.nc.NewInbox()+`"`), "bad-json"); ok {
			t.Error("a verdict for a body that is not JSON")
		}
		for i, c := range []struct {
			body   map[string]any
			reason string
		}{
			{map[string]any{"kind": "complete", "jobId": j.ID}, "has no delivery"},
			{map[string]any{"kind": "complete", "delivery": d.msg.Reply}, "has no jobId"},
			{map[string]any{"kind": "done", "jobId": j.ID, "delivery": d.msg.Reply}, `unknown kind "done"`},
			{map[string]any{"kind": "bpmnError", "jobId": j.ID, "delivery": d.msg.Reply}, "has no errorCode"},
			{map[string]any{"kind": "complete", "jobId": j.ID, "delivery": "not-a-subject"}, "is not a JetStream reply subject"},
			{map[string]any{"kind": "complete", "jobId": j.ID, "delivery": forged(streams.EventsStream, "partition-0", seq)}, "is not from stream JETBPM_JOBS"},
			{map[string]any{"kind": "complete", "jobId": j.ID, "delivery": forged(streams.JobsStream, w.consumer, seq+1000)}, "is not a delivery of job"},
			{map[string]any{"kind": "complete", "jobId": j.ID, "delivery": forged(streams.JobsStream, "topic-other", seq)}, "is not a delivery of job"},
			{map[string]any{"kind": "complete", "jobId": id + "/none/1", "delivery": d.msg.Reply}, "unknown or finished job"},
		} {
			v, ok := w.send(j.ReportTo, c.body, fmt.Sprintf("malformed-%d", i))
			if !ok || v.Accepted || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("%v: verdict %+v (received %v), want refused with %q", c.body, v, ok, c.reason)
			}
		}

		// Nothing changed: the job is still delivery 1, held by w.
		view, err := s.eng.Instance(context.Background(), id)
		if err != nil || view.Status != instance.Active {
			t.Fatalf("%+v, %v", view, err)
		}
		wantAccepted(t, w.report(d, "complete", map[string]any{"output": map[string]any{"ok": true}}), "complete")
		if view := waitDone(t, s.eng, id); view.Status != instance.Completed || view.Variables["ok"] != true {
			t.Fatalf("%+v", view)
		}
	})
}

// TestWorkerProtocolFailRetries: an EngineAuthoritative job gets the raw
// fault; the engine classifies it by the rules (a BPMN error here) or
// retries it (a redelivery the next fetch checks in for).
func TestWorkerProtocolFailRetries(t *testing.T) {
	t.Parallel()
	runProto(t, func(t *testing.T, s protoSetup) {
		id := deployWorkerTask(t, s, "raw", "payments", nil,
			model.WithWorkerTrust(jobs.EngineAuthoritative),
			model.WithRetryPolicy(jobs.FixedDelaySpec(3, 100*time.Millisecond)),
			model.WithErrorMapper(jobs.Rule{Code: "402", Outcome: jobs.BusinessError, ErrorCode: "PAYMENT_DECLINED"}))
		w := newProtoWorker(t, s, "w", "payments")
		d := w.fetch()
		if d.job.Policy != nil {
			t.Fatalf("policy shipped to an EngineAuthoritative worker: %v", d.job.Policy)
		}
		v := w.report(d, "fail", map[string]any{"code": "503", "body": map[string]any{"error": "busy"}})
		wantAccepted(t, v, "fail")
		if !strings.Contains(v.Reason, "retrying in 100ms") {
			t.Errorf("fail verdict reason %q", v.Reason)
		}
		d = w.fetch()
		if d.count != 2 {
			t.Fatalf("retry delivery count %d", d.count)
		}
		wantAccepted(t, w.report(d, "checkin", nil), "checkin")
		wantAccepted(t, w.report(d, "fail", map[string]any{"code": "402", "body": "declined"}), "fail")
		// No boundary catches the error: an incident on the task.
		if _, inc := waitIncident(t, s.eng, id); inc.CauseClass != "bpmnError" || !strings.Contains(inc.Cause, "PAYMENT_DECLINED") {
			t.Fatalf("%+v", inc)
		}
	})
}

// Workers are untrusted input. These guard the holes found while writing
// docs/worker-protocol.md.

// The engine sends verdicts with its own permissions, so it must send them
// to inboxes only: a replyTo naming an instance's KV key is ignored.
func TestWorkerProtocolReplyToMustBeAnInbox(t *testing.T) {
	t.Parallel()
	s := startNatsConfSetup(t)
	id := deployWorkerTask(t, s, "victim", "payments", nil)
	w := newProtoWorker(t, s, "w", "payments")
	evil := []byte(`{"kind":"complete","jobId":"x","delivery":"x","replyTo":"$KV.jetbpm-instances.` + id + `"}`)
	w.send(streams.ReportSubject(0, "payments", "nobody"), evil, "evil")
	// A well-formed report to the same partition is decided after the evil
	// one: once its verdict arrives, the evil one has been handled too.
	v, _ := w.send(streams.ReportSubject(0, "payments", "nobody"), map[string]any{"kind": "checkin", "jobId": "y", "delivery": "y"}, "probe")
	if v.Accepted {
		t.Fatalf("probe accepted: %+v", v)
	}
	if _, err := s.eng.Instance(context.Background(), id); err != nil {
		t.Fatalf("a worker's replyTo overwrote the checkpoint of %s: %v", id, err)
	}
}

// A report naming a live job but sent to another instance's subject finds
// no job there; the engine must not terminate the live job's message.
func TestWorkerProtocolForeignReportLeavesJobAlone(t *testing.T) {
	t.Parallel()
	s := startNatsConfSetup(t)
	deployWorkerTask(t, s, "victim", "payments", nil, model.WithLockDuration(time.Second))
	w := newProtoWorker(t, s, "w", "payments")
	d := w.fetch()
	v, _ := w.send(streams.ReportSubject(0, "payments", "ghost"),
		map[string]any{"kind": "fail", "jobId": d.job.ID, "delivery": d.msg.Reply}, "foreign")
	wantRefused(t, v, "fail", "unknown or finished job")
	if d2 := w.pull(3 * time.Second); d2 == nil {
		t.Fatal("the job was terminated by a report sent to another instance")
	}
}

// Reports have their own stream, which refuses rollups and schedules: a
// worker's headers can neither purge events nor schedule forged ones.
func TestWorkerProtocolReportHeadersCannotPurgeOrSchedule(t *testing.T) {
	t.Parallel()
	s := startNatsConfSetup(t)
	w := newProtoWorker(t, s, "w", "payments")
	for _, h := range []struct{ key, value string }{
		{"Nats-Rollup", "all"},
		{"Nats-Schedule", "@at 2030-01-01T00:00:00Z"},
		{"Nats-TTL", "1s"},
	} {
		m := nats.NewMsg(streams.ReportSubject(0, "payments", "x"))
		m.Data = []byte("{}")
		m.Header.Set(h.key, h.value)
		if h.key == "Nats-Schedule" {
			m.Header.Set("Nats-Schedule-Target", streams.EventSubject(0, "x"))
		}
		ack, err := w.nc.RequestMsg(m, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var pubAck struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(ack.Data, &pubAck); err != nil || pubAck.Error == nil {
			t.Errorf("a report with %s: %s was stored: %s", h.key, h.value, ack.Data)
		}
	}
}
