package workerkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/workerkit"
)

// Zeebe task listeners served by workerkit handlers: an assigning
// listener denies one user and corrects the priority for the others; a
// completing listener denies a large order's completion; the engine's
// task calls answer once the listeners decided.
func TestTaskListenerHandlers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	p, err := model.NewBuilder("approve").StartEvent("s").
		UserTask("review",
			model.ListenTaskJob(model.JobListener{Event: model.ListenAssigning, Type: "policy"}),
			model.ListenTaskJob(model.JobListener{Event: model.ListenCompleting, Type: "four-eyes"})).
		EndEvent("e").Sequence("s", "review", "e").Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	f.worker(func(w *workerkit.Worker) {
		w.Handle("policy", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			if job.Headers[instance.HeaderAssignee] == "mallory" {
				return nil, workerkit.Deny("mallory may not review orders")
			}
			high := 80
			return nil, workerkit.Correct(jobs.TaskCorrections{Priority: &high})
		})
		w.Handle("four-eyes", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			if job.Input["amount"].(float64) > 100 {
				return nil, workerkit.Deny("a second approver first")
			}
			return nil, nil
		})
	}, workerkit.Options{Name: "listeners"})

	task := func(id string) string {
		var tid string
		testwait.Until(t, waitLimit, "the task of "+id, func() error {
			ts, err := f.eng.Tasks(ctx, engine.TaskFilter{Instance: id})
			if err == nil && len(ts) == 1 {
				tid = ts[0].ID
				return nil
			}
			return errNoTask
		})
		return tid
	}
	big := f.start("approve", map[string]any{"amount": 500})
	tid := task(big)
	if _, err := f.eng.ClaimTask(ctx, tid, "mallory"); err == nil || !strings.Contains(err.Error(), `task listener 1 (assigning, job type "policy") denied it: mallory may not review orders`) {
		t.Fatalf("mallory's claim: %v", err)
	}
	rec, err := f.eng.ClaimTask(ctx, tid, "ann")
	if err != nil || rec.Assignee != "ann" || rec.Priority != 80 {
		t.Fatalf("ann's claim: %+v (%v), want it hers with the listener's priority 80", rec, err)
	}
	if _, err := f.eng.CompleteTask(ctx, tid, "ann", nil); err == nil || !strings.Contains(err.Error(), "denied it: a second approver first") {
		t.Fatalf("completing a large order: %v", err)
	}

	small := f.start("approve", map[string]any{"amount": 50})
	tid = task(small)
	if _, err := f.eng.CompleteTask(ctx, tid, "bob", map[string]any{"approved": true}); err != nil {
		t.Fatal(err)
	}
	if v := f.wait(small); v.Status != instance.Completed || v.Variables["approved"] != true {
		t.Fatalf("small order: %+v", v)
	}
}

var errNoTask = errorString("no task yet")

type errorString string

func (e errorString) Error() string { return string(e) }
