package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// rawWorker speaks the worker protocol with plain NATS calls, as a worker
// in another language would (docs/worker-protocol.md).
type rawWorker struct {
	t    testing.TB
	nc   *nats.Conn
	cons jetstream.Consumer
	held []jetstream.Msg // fetched earlier, returned by the next fetch
}

func newRawWorker(t testing.TB, env *streamstest.Env, topic string) *rawWorker {
	t.Helper()
	nc := env.NewConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.Consumer(ctx, streams.JobsStream, streams.TopicConsumer(topic))
	if err != nil {
		t.Fatal(err)
	}
	return &rawWorker{t: t, nc: nc, cons: cons}
}

// fetch takes one job, failing the test if none arrives in time.
func (w *rawWorker) fetch() (jetstream.Msg, jobs.Job) {
	w.t.Helper()
	if len(w.held) > 0 {
		m := w.held[0]
		w.held = w.held[1:]
		var job jobs.Job
		if err := json.Unmarshal(m.Data(), &job); err != nil {
			w.t.Fatal(err)
		}
		return m, job
	}
	batch, err := w.cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		w.t.Fatal(err)
	}
	m, ok := <-batch.Messages()
	if !ok {
		w.t.Fatalf("no job within 10s: %v", batch.Error())
	}
	var job jobs.Job
	if err := json.Unmarshal(m.Data(), &job); err != nil {
		w.t.Fatal(err)
	}
	return m, job
}

// report sends r for the delivery m and returns the engine's verdict.
func (w *rawWorker) report(m jetstream.Msg, job jobs.Job, r jobs.Report) jobs.Verdict {
	w.t.Helper()
	inbox := nats.NewInbox()
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		w.t.Fatal(err)
	}
	defer sub.Unsubscribe()
	r.JobID, r.Delivery, r.ReplyTo = job.ID, m.Reply(), inbox
	body, _ := json.Marshal(r)
	js, _ := jetstream.New(w.nc)
	if _, err := js.Publish(context.Background(), job.ReportTo, body); err != nil {
		w.t.Fatal(err)
	}
	reply, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		w.t.Fatalf("no verdict for %s: %v", r.Kind, err)
	}
	var v jobs.Verdict
	if err := json.Unmarshal(reply.Data, &v); err != nil {
		w.t.Fatal(err)
	}
	return v
}

func TestRawWorkerCompletesJob(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	p := build(t, model.NewBuilder("pay").StartEvent("s").
		ServiceTask("charge", "", model.WithWorker("payments")).
		EndEvent("e").Sequence("s", "charge", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "pay", map[string]any{"amount": 42})
	if err != nil {
		t.Fatal(err)
	}
	w := newRawWorker(t, env, "payments")
	m, job := w.fetch()
	// The task's policy is its topic's default: the engine keeps it.
	if job.Input["amount"] != 42.0 || job.Instance != id || job.Node != "charge" || job.Policy != nil {
		t.Fatalf("job = %+v", job)
	}
	if v := w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"receipt": "r-1"}}); !v.Accepted {
		t.Fatalf("complete refused: %+v", v)
	}
	view := waitDone(t, eng, id)
	if view.Status != instance.Completed || view.Variables["receipt"] != "r-1" {
		t.Fatalf("%+v", view)
	}
	// The same report again is refused: the job is finished.
	if v := w.report(m, job, jobs.Report{Kind: jobs.Complete}); v.Accepted {
		t.Fatalf("second complete accepted: %+v", v)
	}
}

func TestJobMetrics(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	reg := metrics.NewRegistry()
	ctx := context.Background()
	eng, err := engine.Open(ctx, env.Conn, engine.Options{Logger: quietLog, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(ctx) })
	p := build(t, model.NewBuilder("m").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("mt", model.WithWorkerTrust(jobs.EngineAuthoritative),
			model.WithRetryPolicy(jobs.FixedDelaySpec(2, 0)))).
		EndEvent("e").Sequence("s", "work", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newRawWorker(t, env, "mt")
	m, job := w.fetch()
	var text strings.Builder
	if err := reg.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), `jetbpm_jobs_locked{topic="jetbpm.job.mt.>"} 1`) {
		t.Errorf("no locked job in:\n%s", text.String())
	}
	w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "500"})
	m, job = w.fetch()
	w.report(m, job, jobs.Report{Kind: jobs.CheckIn})
	w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "500"})
	waitIncident(t, eng, id)
	// The checkpoint is visible before its step's effects and verdicts are
	// counted: wait, bounded, for the counters.
	testwait.Until(t, 10*time.Second, "the job metrics", func() error {
		text.Reset()
		if err := reg.WriteText(&text); err != nil {
			return err
		}
		for _, want := range []string{
			`jetbpm_jobs_enqueued_total{topic="mt"} 1`,
			`jetbpm_job_retries_total{topic="mt"} 1`,
			`jetbpm_job_retries_exhausted_total{topic="mt"} 1`,
			`jetbpm_job_reports_total{topic="mt",kind="fail",verdict="accepted"} 2`,
			`jetbpm_instance_facts_total{kind="started"} 1`,
		} {
			if !strings.Contains(text.String(), want) {
				return fmt.Errorf("metrics lack %s:\n%s", want, text.String())
			}
		}
		return nil
	})
}
