package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestTimerFiresAfterRestart parks an instance on a timer, stops the engine
// and the NATS server, restarts both on the same store: the timer fires
// and the instance completes.
func TestTimerFiresAfterRestart(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := context.Background()
	eng := openEngine(t, env, nil)
	p := build(t, model.NewBuilder("nap").StartEvent("s").
		TimerCatchEvent("nap", model.Duration("PT1S")).EndEvent("e").Sequence("s", "nap", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "nap", nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := eng.WaitUntil(wctx, id, func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	env.Restart(t)
	eng = openEngine(t, env, nil)
	if v := waitDone(t, eng, id); v.Status != instance.Completed {
		t.Fatalf("%+v", v)
	}
}

// TestCheckpointSizeLimit: a step whose checkpoint would exceed the limit
// is discarded and the instance fails, naming the size and the limit
// (docs/engine.md §8); a single oversized variable fails it too.
func TestCheckpointSizeLimit(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("blob", func(_ context.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{in["name"].(string): strings.Repeat("x", int(in["size"].(int64)))}, nil
	})
	ctx := context.Background()
	eng := enginetest.Open(t, env.Conn, engine.Options{
		Operations: ops, MaxVariableBytes: 40 << 10, MaxCheckpointBytes: 64 << 10,
	})
	b := model.NewBuilder("blobs").StartEvent("s")
	b.ServiceTask("a", "blob", model.Input("name", `"a"`), model.Input("size", "size"))
	b.ServiceTask("b", "blob", model.Input("name", `"b"`), model.Input("size", "size"))
	b.TimerCatchEvent("pause", model.Duration("PT0.1S"))
	b.ServiceTask("c", "blob", model.Input("name", `"c"`), model.Input("size", "size"))
	b.EndEvent("e").Sequence("s", "a", "b", "pause", "c", "e")
	if _, err := eng.Deploy(ctx, build(t, b)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		size int
		want string
	}{
		{30 << 10, "over the 65536-byte limit"}, // three 30 KiB variables outgrow the checkpoint at "c": it cannot be stored, the instance fails
		{50 << 10, "the limit is 40960"},        // one variable is too large: a data-flow incident on "a"
	} {
		id, err := eng.Start(ctx, "blobs", map[string]any{"size": tc.size})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		v, err := eng.WaitUntil(wctx, id, func(v *engine.InstanceView) bool { return v.Status != instance.Active })
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		msg := ""
		switch {
		case v.Failure != nil:
			msg = v.Failure.Message
		case len(v.Incidents) > 0:
			msg = v.Incidents[0].Cause
		}
		if !strings.Contains(msg, tc.want) {
			t.Fatalf("size %d: %+v %+v %+v", tc.size, v.Status, v.Failure, v.Incidents)
		}
	}
}
