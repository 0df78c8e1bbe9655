package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// A report's subject names the job's topic, so nats.conf can allow a
// worker the reports of its own topics only. The engine holds the subject
// to that: a report naming a job of another topic than its subject's is
// refused and changes nothing, whatever the body says.

// TestWorkerProtocolReportTopicMustBeTheJobs: a worker allowed the reports
// of topic "other" sends them for a job of "payments", with the job's real
// id and delivery; each is refused, and the holder's own complete still
// finds the job at its delivery 1.
func TestWorkerProtocolReportTopicMustBeTheJobs(t *testing.T) {
	t.Parallel()
	runProto(t, func(t *testing.T, s protoSetup) {
		id := deployWorkerTask(t, s, "topical", "payments", nil, model.WithLockDuration(10*time.Second))
		w := newProtoWorker(t, s, "w", "payments")
		d := w.fetch()
		partition := streams.PartitionOf(id, s.partitions)
		if want := streams.ReportSubject(partition, "payments", id); d.job.ReportTo != want {
			t.Fatalf("reportTo %s, want %s", d.job.ReportTo, want)
		}
		forged := streams.ReportSubject(partition, "other", id)
		for i, body := range []map[string]any{
			{"kind": "complete", "output": map[string]any{"by": "forger"}},
			{"kind": "fail", "code": "E", "retries": 0},
			{"kind": "bpmnError", "errorCode": "FORGED"},
			{"kind": "extend"},
		} {
			kind := body["kind"].(string)
			body["jobId"], body["delivery"] = d.job.ID, d.msg.Reply
			v, ok := w.send(forged, body, fmt.Sprintf("forged-%d", i))
			if !ok {
				t.Fatalf("no verdict for a %s on %s", kind, forged)
			}
			wantRefused(t, v, kind, `report subject names topic "other", not the topic of job `+d.job.ID)
		}
		// The subject of a build before topics were in it names no topic.
		old := fmt.Sprintf("jetbpm.rpt.%d.%s", partition, id)
		v, ok := w.send(old, map[string]any{"kind": "complete", "jobId": d.job.ID, "delivery": d.msg.Reply}, "old-subject")
		if !ok {
			t.Fatalf("no verdict for a report on %s", old)
		}
		wantRefused(t, v, "complete", "report subject names no valid topic and instance")

		if view, err := s.eng.Instance(context.Background(), id); err != nil || view.Status != instance.Active {
			t.Fatalf("after the forged reports: %+v, %v", view, err)
		}
		wantAccepted(t, w.report(d, "complete", map[string]any{"output": map[string]any{"by": "holder"}}), "complete")
		if view := waitDone(t, s.eng, id); view.Status != instance.Completed || view.Variables["by"] != "holder" {
			t.Fatalf("%+v", view)
		}
	})
}

// TestWorkerProtocolUnknownJobOfAnotherTopicLeftAlone: a job message the
// instance no longer knows (its ack was lost) is terminated by a report
// about it, but only one on its own topic's subject.
func TestWorkerProtocolUnknownJobOfAnotherTopicLeftAlone(t *testing.T) {
	t.Parallel()
	runProto(t, func(t *testing.T, s protoSetup) {
		id := deployWorkerTask(t, s, "leftover", "payments", nil, model.WithLockDuration(time.Second))
		partition := streams.PartitionOf(id, s.partitions)
		// A job message of the instance that its checkpoint does not hold.
		ghost := id + "/gone/1"
		m := nats.NewMsg(streams.JobSubject("payments", ghost))
		m.Data, _ = json.Marshal(map[string]any{"id": ghost, "topic": "payments", "instanceId": id,
			"reportTo": streams.ReportSubject(partition, "payments", id), "lockDurationMs": 1000})
		m.Header.Set("Jetbpm-Job", ghost)
		m.Header.Set("Jetbpm-Instance", id)
		if _, err := s.admin.RequestMsg(m, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		w := newProtoWorker(t, s, "w", "payments")
		// fetchGhost pulls for three locks, skipping the instance's own
		// job, which comes round too; nil if the leftover does not come.
		fetchGhost := func() *protoDelivery {
			t.Helper()
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
				if d := w.pull(max(time.Until(deadline), 100*time.Millisecond)); d != nil && d.job.ID == ghost {
					return d
				}
			}
			return nil
		}
		d := fetchGhost()
		if d == nil {
			t.Fatal("the leftover job message was not delivered")
		}
		report := map[string]any{"kind": "complete", "jobId": ghost, "delivery": d.msg.Reply}
		v, _ := w.send(streams.ReportSubject(partition, "other", id), report, "other-topic")
		wantRefused(t, v, "complete", "unknown or finished job")
		if d = fetchGhost(); d == nil {
			t.Fatal("a report on another topic's subject terminated the job message")
		}
		v, _ = w.send(d.job.ReportTo, report, "own-topic")
		wantRefused(t, v, "complete", "unknown or finished job")
		if d = fetchGhost(); d != nil {
			t.Fatalf("a report on the job's own subject did not terminate it: delivery %d", d.count)
		}
	})
}
