package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestLoopReentersTimerNode visits one timer node five times within a
// second: each visit is a new activation with its own timer id, so neither
// the schedule subject nor the Nats-Msg-Id window collides.
func TestLoopReentersTimerNode(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	p := build(t, model.NewBuilder("loop").
		StartEvent("start").
		TimerCatchEvent("tick", model.Duration("PT0.05S")).
		ScriptTask("count", "n + 1", "n").
		ExclusiveGateway("again").
		EndEvent("end").
		Sequence("start", "tick", "count", "again").
		Flow("again", "tick", model.When("n < 5")).
		DefaultFlow("again", "end"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "loop", map[string]any{"n": 0})
	if err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["n"] != int64(5) {
		t.Fatalf("%+v", v)
	}
}

// TestBoundaryTimers runs a sub-process waiting an hour, with a
// non-interrupting cycle boundary that fires twice and an interrupting one
// that ends the wait; the hour timer's schedule is purged.
func TestBoundaryTimers(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	b := model.NewBuilder("guarded").StartEvent("start")
	sub := b.SubProcess("work")
	sub.StartEvent("ws").TimerCatchEvent("hour", model.Duration("PT1H")).EndEvent("we").Sequence("ws", "hour", "we")
	b.TimerBoundary("remind", "work", model.Cycle("R2/PT0.1S"), false).
		ScriptTask("note", "reminders + 1", "reminders").EndEvent("noted").
		TimerBoundary("give-up", "work", model.Duration("PT1S"), true).
		ScriptTask("timeout", "true", "timedOut").
		EndEvent("done").
		Sequence("start", "work", "done").
		Sequence("remind", "note", "noted").
		Sequence("give-up", "timeout", "done")
	if _, err := eng.Deploy(ctx, build(t, b)); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "guarded", map[string]any{"reminders": 0})
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["reminders"] != int64(2) || v.Variables["timedOut"] != true {
		t.Fatalf("%+v", v)
	}
	st, err := env.JS.Stream(ctx, streams.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	// Purging the hour timer is an effect published after the checkpoint
	// the instance completed with: give it a bounded moment.
	testwait.Until(t, 5*time.Second, "no timer schedules left", func() error {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(streams.TimersSubjects))
		if err == nil && len(info.State.Subjects) > 0 {
			err = fmt.Errorf("left behind: %v", info.State.Subjects)
		}
		return err
	})
}

// TestErrorEndCaughtOnSubProcess: an error end event inside a sub-process
// is caught by the sub-process's error boundary; an uncaught one fails the
// instance with the code.
func TestErrorEndCaughtOnSubProcess(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		code string
		want instance.Status
	}{{"REJECTED", instance.Completed}, {"OTHER", instance.Failed}} {
		b := model.NewBuilder("check-" + tc.code).StartEvent("start")
		b.SubProcess("check").StartEvent("cs").ErrorEndEvent("reject", tc.code).Sequence("cs", "reject")
		b.ErrorBoundary("rejected", "check", "REJECTED").
			ScriptTask("mark", `"rejected"`, "outcome").EndEvent("end").EndEvent("ok").
			Sequence("start", "check", "ok").Sequence("rejected", "mark", "end")
		if _, err := eng.Deploy(ctx, build(t, b)); err != nil {
			t.Fatal(err)
		}
		id, err := eng.Start(ctx, "check-"+tc.code, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := waitDone(t, eng, id)
		if v.Status != tc.want {
			t.Fatalf("%s: %+v %+v", tc.code, v, v.Failure)
		}
		if tc.want == instance.Failed && (v.Failure == nil || v.Failure.Code != tc.code || v.Failure.Node != "reject") {
			t.Fatalf("failure = %+v", v.Failure)
		}
	}
}
