package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func timerStartProcess(t *testing.T, id string, tm model.Timer) *model.Process {
	t.Helper()
	return build(t, model.NewBuilder(id).
		TimerStartEvent("tick", tm).EndEvent("end").
		Sequence("tick", "end"))
}

// timerStartInstances returns the instances of process by version; each
// must have been started by a timer (id "t...") and have completed.
func timerStartInstances(t *testing.T, eng *engine.Engine, process string) map[int]int {
	t.Helper()
	views, err := eng.Instances(context.Background(), engine.Filter{ProcessID: process})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, v := range views {
		if !strings.HasPrefix(v.ID, "t") {
			t.Fatalf("instance %s of %s was not started by its timer", v.ID, process)
		}
		out[v.Version]++
	}
	return out
}

// timerStartsIdle reports nil once process has no schedule left and every
// fire has been taken and acknowledged: nothing more will start.
func timerStartsIdle(env *streamstest.Env, process string) error {
	ctx := context.Background()
	stream, err := env.JS.Stream(ctx, streams.TimerStartsStream)
	if err != nil {
		return err
	}
	if m, err := stream.GetLastMsgForSubject(ctx, streams.TimerStartSchedule(process)); err == nil {
		return fmt.Errorf("a schedule is still set: %s", m.Header.Get("Nats-Schedule"))
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return err
	}
	cons, err := stream.Consumer(ctx, streams.TimerStartsConsumer)
	if err != nil {
		return err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	if info.NumPending > 0 || info.NumAckPending > 0 {
		return fmt.Errorf("fires pending %d, unacknowledged %d", info.NumPending, info.NumAckPending)
	}
	return nil
}

// scheduledVersion returns the version whose schedule process's subject
// holds, if any.
func scheduledVersion(t *testing.T, env *streamstest.Env, process string) (int, bool) {
	t.Helper()
	stream, err := env.JS.Stream(context.Background(), streams.TimerStartsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetLastMsgForSubject(context.Background(), streams.TimerStartSchedule(process))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Version int `msgpack:"version"`
	}
	if err := streams.Unmarshal(m.Data, &body); err != nil {
		t.Fatal(err)
	}
	return body.Version, true
}

// TestTimerStartCycleTwoNodes: R3/PT1S with two engine nodes sharing the
// consumer starts exactly three instances, then schedules nothing more.
func TestTimerStartCycleTwoNodes(t *testing.T) {
	env := streamstest.Start(t)
	nodeA := openEngine(t, env, nil)
	nodeB := openEngine(t, env, nil)
	if _, err := nodeA.Deploy(context.Background(), timerStartProcess(t, "tick3", model.Cycle("R3/PT1S"))); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "three fires taken and no schedule left", func() error {
		if n := timerStartInstances(t, nodeB, "tick3")[1]; n < 3 {
			return fmt.Errorf("%d instances", n)
		}
		return timerStartsIdle(env, "tick3")
	})
	if got := timerStartInstances(t, nodeB, "tick3"); got[1] != 3 || len(got) != 1 {
		t.Fatalf("instances by version: %v, want 3 of version 1", got)
	}
	views, err := nodeA.Instances(context.Background(), engine.Filter{ProcessID: "tick3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		waitDone(t, nodeA, v.ID)
	}
}

// TestTimerStartRedeployStopsOldTimer: a new version replaces the old
// version's timer start; a version without one cancels it.
func TestTimerStartRedeployStopsOldTimer(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	if _, err := eng.Deploy(ctx, timerStartProcess(t, "every", model.Cycle("R/PT1S"))); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "version 1 fires", func() error {
		if n := timerStartInstances(t, eng, "every")[1]; n < 1 {
			return errors.New("no instance yet")
		}
		return nil
	})
	// Version 2 fires twice; version 1 never again.
	if _, err := eng.Deploy(ctx, timerStartProcess(t, "every", model.Cycle("R2/PT1S"))); err != nil {
		t.Fatal(err)
	}
	if v, ok := scheduledVersion(t, env, "every"); !ok || v != 2 {
		t.Fatalf("after the deploy of version 2 the schedule is of version %d (set %v)", v, ok)
	}
	testwait.Until(t, 30*time.Second, "version 2 fires twice and stops", func() error {
		if n := timerStartInstances(t, eng, "every")[2]; n < 2 {
			return fmt.Errorf("%d instances of version 2", n)
		}
		return timerStartsIdle(env, "every")
	})
	v1 := timerStartInstances(t, eng, "every")[1]
	if got := timerStartInstances(t, eng, "every")[2]; got != 2 {
		t.Fatalf("version 2 started %d instances, want 2", got)
	}

	// Version 4 has no timer start: it cancels version 3's endless cycle.
	if _, err := eng.Deploy(ctx, timerStartProcess(t, "every", model.Cycle("R/PT1S"))); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "version 3 fires", func() error {
		if n := timerStartInstances(t, eng, "every")[3]; n < 1 {
			return errors.New("no instance of version 3 yet")
		}
		return nil
	})
	none := build(t, model.NewBuilder("every").StartEvent("start").EndEvent("end").Sequence("start", "end"))
	if _, err := eng.Deploy(ctx, none); err != nil {
		t.Fatal(err)
	}
	if v, ok := scheduledVersion(t, env, "every"); ok {
		t.Fatalf("after the deploy of a version without a timer start, version %d's schedule is still set", v)
	}
	testwait.Until(t, 30*time.Second, "the schedule of version 3 cancelled", func() error {
		return timerStartsIdle(env, "every")
	})
	got := timerStartInstances(t, eng, "every")
	if got[1] != v1 || got[2] != 2 || got[4] != 0 {
		t.Fatalf("instances by version %v: version 1 had %d when version 2 replaced it", got, v1)
	}
}

// TestTimerStartRestartAcrossDueFire: a fire due while no engine runs
// starts its instance once the engine is back, exactly once, even when
// the fire is delivered twice.
func TestTimerStartRestartAcrossDueFire(t *testing.T) {
	env := streamstest.Start(t)
	ctx := context.Background()
	first, err := engine.Open(ctx, env.NewConn(t), engine.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Deploy(ctx, timerStartProcess(t, "later", model.Cycle("R1/PT1S"))); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	stream, err := env.JS.Stream(ctx, streams.TimerStartsStream)
	if err != nil {
		t.Fatal(err)
	}
	var fire *jetstream.RawStreamMsg
	testwait.Until(t, 30*time.Second, "the fire due with no engine running", func() error {
		fire, err = stream.GetLastMsgForSubject(ctx, streams.TimerStartFireSubject("later"))
		return err
	})
	// The same fire a second time, as a redelivery or a second node
	// would take it: it starts nothing more.
	if _, err := env.JS.Publish(ctx, fire.Subject, fire.Data); err != nil {
		t.Fatal(err)
	}
	if got := timerStartInstances(t, first, "later"); len(got) != 0 {
		t.Fatalf("instances before the engine came back: %v", got)
	}
	eng := openEngine(t, env, nil)
	testwait.Until(t, 30*time.Second, "the fire taken after the restart", func() error {
		if n := timerStartInstances(t, eng, "later")[1]; n < 1 {
			return errors.New("no instance yet")
		}
		return timerStartsIdle(env, "later")
	})
	if got := timerStartInstances(t, eng, "later"); got[1] != 1 || len(got) != 1 {
		t.Fatalf("instances by version: %v, want 1 of version 1", got)
	}
}

// TestTimerStartPastDate: a timeDate in the past fires once, at once;
// deploying the identical process again fires nothing more.
func TestTimerStartPastDate(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	p := timerStartProcess(t, "once", model.Date("2020-01-01T00:00:00Z"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "the past date fires", func() error {
		if n := timerStartInstances(t, eng, "once")[1]; n < 1 {
			return errors.New("no instance yet")
		}
		return timerStartsIdle(env, "once")
	})
	if _, err := eng.Deploy(ctx, timerStartProcess(t, "once", model.Date("2020-01-01T00:00:00Z"))); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "nothing scheduled", func() error { return timerStartsIdle(env, "once") })
	got := timerStartInstances(t, eng, "once")
	if got[1] != 1 || len(got) != 1 {
		t.Fatalf("instances by version: %v, want 1 of version 1", got)
	}
	views, err := eng.Instances(ctx, engine.Filter{ProcessID: "once"})
	if err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, views[0].ID); v.Status != instance.Completed {
		t.Fatalf("status %s", v.Status)
	}
}
