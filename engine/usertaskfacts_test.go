package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// storedTaskFacts reads every task fact of processID stored in the facts
// stream, in order.
func storedTaskFacts(t testing.TB, js jetstream.JetStream, processID string) []instance.TaskFact {
	t.Helper()
	ctx := bounded(t)
	stream, err := js.Stream(ctx, streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	var out []instance.TaskFact
	for seq := uint64(1); ; {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(streams.FactFilter(streams.FactTask, processID)))
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return out
			}
			t.Fatal(err)
		}
		var f instance.TaskFact
		if err := json.Unmarshal(m.Data, &f); err != nil {
			t.Fatal(err)
		}
		if m.Subject != streams.FactSubject(streams.FactTask, processID, string(f.Kind)) || m.Header.Get(jetstream.MsgIDHeader) != f.ID {
			t.Errorf("fact %+v stored on %s with id %q", f, m.Subject, m.Header.Get(jetstream.MsgIDHeader))
		}
		out = append(out, f)
		seq = m.Sequence + 1
	}
}

// TestUserTaskFacts: each change of a task a notifier cares about is
// stored once on jetbpm.fact.task.<process>.<kind>, naming who acted;
// un-assigning publishes none.
func TestUserTaskFacts(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deployTasks(t, eng, approvalProcess(t, "noted", model.Named("Note"), model.WithHuman(model.Human{CandidateGroups: `"ops"`})))
	startTask(t, eng, "noted", "n-1", nil)
	task := taskAt(t, eng, "n-1", "review")
	steps := []func() (*instance.Task, error){
		func() (*instance.Task, error) { return eng.ClaimTask(ctx, task, "alice") },
		func() (*instance.Task, error) { return eng.UnclaimTask(ctx, task, "alice") },
		func() (*instance.Task, error) { return eng.ClaimTask(ctx, task, "bob") },
		func() (*instance.Task, error) { return eng.CompleteTask(ctx, task, "bob", nil) },
	}
	for _, step := range steps {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
	}
	waitDone(t, eng, "n-1")
	want := []string{"created  by ", "assigned alice by alice", "assigned bob by bob", "completed bob by bob"}
	var got []string
	testwait.Until(t, 10*time.Second, "the task's facts", func() error {
		facts := storedTaskFacts(t, env.JS, "noted")
		got = got[:0]
		for _, f := range facts {
			if f.Task != task || f.Instance != "n-1" || f.ProcessID != "noted" || f.Node != "review" || f.Name != "Note" ||
				fmt.Sprint(f.CandidateGroups) != "[ops]" || f.Time.IsZero() || !strings.HasPrefix(f.ID, task+".") {
				return fmt.Errorf("fact %+v", f)
			}
			got = append(got, fmt.Sprintf("%s %s by %s", f.Kind, f.Assignee, f.User))
		}
		if len(got) < len(want) {
			return fmt.Errorf("stored %q", got)
		}
		return nil
	})
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("facts %q, want %q", got, want)
	}
}

// TestUserTaskMetrics: the open tasks and the age of each process's oldest
// open task, read from the index at scrape, on the engine's clock.
func TestUserTaskMetrics(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	reg := metrics.NewRegistry()
	var now atomic.Int64
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now.Store(t0.UnixNano())
	eng := enginetest.Open(t, env.Conn, engine.Options{Metrics: reg, Now: func() time.Time { return time.Unix(0, now.Load()).UTC() }})
	deployTasks(t, eng, approvalProcess(t, "m-a"), approvalProcess(t, "m-b"))
	startTask(t, eng, "m-a", "ma-1", nil)
	startTask(t, eng, "m-b", "mb-1", nil)
	ma1, mb1 := taskAt(t, eng, "ma-1", "review"), taskAt(t, eng, "mb-1", "review")
	now.Store(t0.Add(30 * time.Second).UnixNano())
	startTask(t, eng, "m-a", "ma-2", nil)
	taskAt(t, eng, "ma-2", "review")
	now.Store(t0.Add(90 * time.Second).UnixNano())
	scrape := func() string {
		var text strings.Builder
		if err := reg.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		return text.String()
	}
	testwait.Until(t, 10*time.Second, "the metrics of three open tasks", func() error {
		text := scrape()
		for _, want := range []string{
			"jetbpm_tasks_open 3",
			`jetbpm_task_oldest_open_age_seconds{process="m-a"} 90`,
			`jetbpm_task_oldest_open_age_seconds{process="m-b"} 90`,
			`jetbpm_task_facts_total{kind="created"} 3`,
		} {
			if !strings.Contains(text, want) {
				return fmt.Errorf("metrics lack %s:\n%s", want, text)
			}
		}
		return nil
	})
	// ma-1 done: m-a's oldest open task is ma-2, 60 s old; m-b's goes too.
	for _, task := range []string{ma1, mb1} {
		if _, err := eng.CompleteTask(bounded(t), task, "alice", nil); err != nil {
			t.Fatal(err)
		}
	}
	listed(t, eng, engine.TaskFilter{}, "ma-2.t2")
	// The task records are written before the step's effects are counted:
	// the list can show the completions a moment before the counter does.
	var text string
	testwait.Until(t, 10*time.Second, "the metrics after the completions", func() error {
		text = scrape()
		for _, want := range []string{"jetbpm_tasks_open 1", `jetbpm_task_oldest_open_age_seconds{process="m-a"} 60`, `jetbpm_task_facts_total{kind="completed"} 2`} {
			if !strings.Contains(text, want) {
				return fmt.Errorf("metrics lack %s:\n%s", want, text)
			}
		}
		return nil
	})
	if strings.Contains(text, `process="m-b"`) {
		t.Errorf("a process without open tasks has an age:\n%s", text)
	}
}
