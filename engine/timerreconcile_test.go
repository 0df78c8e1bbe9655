package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// reconciled waits until eng's start-up reconciliation of the timer
// starts has run.
func reconciled(t *testing.T, eng *engine.Engine) {
	t.Helper()
	select {
	case <-engine.TimerStartsReconciled(eng):
	case <-time.After(20 * time.Second):
		t.Fatal("the start-up reconciliation of the timer starts did not run in 20 s")
	}
}

// TestTimerStartReconcileLostSchedule: a deploy that dies between its
// batch and its schedule leaves the timer unarmed; the next engine start
// arms it, and a start after the timer is done arms nothing.
func TestTimerStartReconcileLostSchedule(t *testing.T) {
	env := streamstest.Start(t)
	ctx := context.Background()
	var opts engine.Options
	engine.DieBeforeTimerSchedule(&opts)
	dying := enginetest.Open(t, env.Conn, opts)
	reconciled(t, dying) // a reconciliation after the deploy would arm what the deploy lost
	_, err := dying.Deploy(ctx, timerStartProcess(t, "lost", model.Cycle("R2/PT1S")))
	if err == nil || !strings.Contains(err.Error(), "timer start schedule is not set") {
		t.Fatalf("deploy error %v, want the schedule reported unset", err)
	}
	if v, ok := scheduledVersion(t, env, "lost"); ok {
		t.Fatalf("version %d scheduled by a deploy that died before", v)
	}

	eng := openEngine(t, env, nil)
	reconciled(t, eng)
	testwait.Until(t, 30*time.Second, "the re-armed timer fires twice", func() error {
		if n := timerStartInstances(t, eng, "lost")[1]; n < 2 {
			return fmt.Errorf("%d instances", n)
		}
		return timerStartsIdle(env, "lost")
	})
	// Another start finds the timer done: it arms nothing.
	again := openEngine(t, env, nil)
	reconciled(t, again)
	if v, ok := scheduledVersion(t, env, "lost"); ok {
		t.Fatalf("a finished timer re-armed (version %d) at start-up", v)
	}
	if got := timerStartInstances(t, eng, "lost"); got[1] != 2 || len(got) != 1 {
		t.Fatalf("instances by version %v, want 2 of version 1", got)
	}
}

// TestTimerStartReconcileReplacesOldSchedule: a deploy of version 2 that
// dies before its schedule leaves version 1's; the next start replaces it
// with version 2's, and version 1 starts nothing.
func TestTimerStartReconcileReplacesOldSchedule(t *testing.T) {
	env := streamstest.Start(t)
	ctx := context.Background()
	first := openEngine(t, env, nil)
	if _, err := first.Deploy(ctx, timerStartProcess(t, "old", model.Cycle("R/PT1H"))); err != nil {
		t.Fatal(err)
	}
	var opts engine.Options
	engine.DieBeforeTimerSchedule(&opts)
	dying := enginetest.Open(t, env.Conn, opts)
	// Both nodes' start-up reconciliations are over: one running after
	// the dying deploy would arm version 2 before the test's own restart.
	reconciled(t, first)
	reconciled(t, dying)
	if _, err := dying.Deploy(ctx, timerStartProcess(t, "old", model.Cycle("R2/PT1S"))); err == nil {
		t.Fatal("the dying deploy reported success")
	}
	if v, ok := scheduledVersion(t, env, "old"); !ok || v != 1 {
		t.Fatalf("after the dying deploy the schedule is of version %d (set %v), want 1", v, ok)
	}
	eng := openEngine(t, env, nil)
	reconciled(t, eng)
	testwait.Until(t, 30*time.Second, "version 2 fires twice", func() error {
		if n := timerStartInstances(t, eng, "old")[2]; n < 2 {
			return fmt.Errorf("%d instances of version 2", n)
		}
		return timerStartsIdle(env, "old")
	})
	if got := timerStartInstances(t, eng, "old"); got[2] != 2 || len(got) != 1 {
		t.Fatalf("instances by version %v, want 2 of version 2 only", got)
	}
}

// TestTimerStartDiesAfterStart: a node that dies after starting a fire's
// instance, before it acknowledged the fire or scheduled the next, leaves
// the fire to be redelivered; the node that takes it starts nothing twice
// and the cycle goes on: exactly one instance per fire. The engines'
// clocks stand still at the deploy, so the redelivery's delay skips no
// fire of the cycle (a fire missed while down would be skipped).
func TestTimerStartDiesAfterStart(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := context.Background()
	deployed := time.Now()
	clock := func() time.Time { return deployed }
	opts := engine.Options{Now: clock, Logger: enginetest.QuietLog}
	var died atomic.Value // the instance the first fire started
	engine.DieAfterTimerStart(&opts, func(id string) bool {
		return died.CompareAndSwap(nil, id)
	})
	dying, err := engine.Open(ctx, env.NewConn(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dying.Deploy(ctx, timerStartProcess(t, "crash", model.Cycle("R2/PT1S"))); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "the first fire started its instance and its node died", func() error {
		if died.Load() == nil {
			return errors.New("no fire taken yet")
		}
		return nil
	})
	if err := dying.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eng := enginetest.Open(t, env.Conn, engine.Options{Now: clock})
	testwait.Until(t, 30*time.Second, "both fires taken and no schedule left", func() error {
		if n := timerStartInstances(t, eng, "crash")[1]; n < 2 {
			return fmt.Errorf("%d instances (%v)", n, timerStartsIdle(env, "crash"))
		}
		return timerStartsIdle(env, "crash")
	})
	views, err := eng.Instances(ctx, engine.Filter{ProcessID: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 || !slices.ContainsFunc(views, func(v *engine.InstanceView) bool { return v.ID == died.Load() }) {
		t.Fatalf("instances %v, want 2, one of them %v", views, died.Load())
	}
}

// TestTimerStartCronInjectedClock: a cron timer start fires at each match
// of its expression, on the engine's clock: with the clock stopped at New
// Year 2021, a Quartz expression for 09:00 on every 13th of 2021 starts
// exactly twelve instances, one per due time, then is done.
func TestTimerStartCronInjectedClock(t *testing.T) {
	env := streamstest.Start(t)
	newYear := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	eng := enginetest.Open(t, env.Conn, engine.Options{Now: func() time.Time { return newYear }})
	tm := model.Timer{Type: model.TimerCycle, Value: "0 0 9 13 * ? 2021", Quartz: true}
	dep, err := eng.Deploy(context.Background(), timerStartProcess(t, "thirteenth", tm))
	if err != nil {
		t.Fatal(err)
	}
	if ts := dep.TimerStart; ts == nil || ts.Node != "tick" || ts.Timer != tm.Value || !ts.Next.Equal(time.Date(2021, 1, 13, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("deployment %+v: want the timer start tick first firing 2021-01-13 09:00", dep)
	}
	var want []string
	for m := time.January; m <= time.December; m++ {
		want = append(want, engine.TimerStartID("thirteenth", 1, time.Date(2021, m, 13, 9, 0, 0, 0, time.UTC)))
	}
	slices.Sort(want)
	testwait.Until(t, 60*time.Second, "twelve fires taken and no schedule left", func() error {
		if n := timerStartInstances(t, eng, "thirteenth")[1]; n < 12 {
			return fmt.Errorf("%d instances", n)
		}
		return timerStartsIdle(env, "thirteenth")
	})
	views, err := eng.Instances(context.Background(), engine.Filter{ProcessID: "thirteenth"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range views {
		got = append(got, v.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("instances %v,\nwant one per 13th of 2021 %v", got, want)
	}
}

// TestTimerStartLoanGranting runs the Camunda 7 example whose timer start
// is the Quartz cron "0/5 0/1 * 1/1 * ?" (every five seconds): a fire
// starts an instance that the test's workers carry to its end.
func TestTimerStartLoanGranting(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	deps, err := eng.DeployFile(ctx, corpus+"camunda7-examples/loan-granting.bpmn")
	if err != nil {
		t.Fatal(err)
	}
	var id string
	testwait.Until(t, 30*time.Second, "the cron timer starts an instance", func() error {
		views, err := eng.Instances(ctx, engine.Filter{ProcessID: "loan_process"})
		if err != nil || len(views) == 0 {
			return fmt.Errorf("no instance yet (%v)", err)
		}
		id = views[0].ID
		return nil
	})
	// A version without the timer start stops the fires.
	plain := build(t, model.NewBuilder("loan_process").StartEvent("start").EndEvent("end").Sequence("start", "end"))
	if _, err := eng.Deploy(ctx, plain); err != nil {
		t.Fatal(err)
	}
	p, err := eng.Process(ctx, "loan_process", deps[0].Version)
	if err != nil {
		t.Fatal(err)
	}
	workers := serveJobs(t, env, id, processTopics(p), map[string]map[string]any{
		"creditScoreChecker": {"creditScores": []any{3, 9}},
	}, nil, 30*time.Second)
	v := waitDone(t, eng, id)
	served := workers.stop()
	if v.Status != instance.Completed {
		t.Fatalf("status %s: %+v", v.Status, v.Failure)
	}
	var nodes []string
	for _, j := range served {
		nodes = append(nodes, j.Node)
	}
	// Score 3 is rejected, score 9 granted.
	if want := []string{"Task_0j0sjlk", "Task_0v4gadf", "Task_1lvjtd4"}; !slices.Equal(nodes, want) {
		t.Fatalf("jobs worked for %v, want %v", nodes, want)
	}
}
