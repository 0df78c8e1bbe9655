package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// BenchmarkTenInProcessTasks measures start→end of a process with ten
// sequential in-process service tasks: one start event on the events
// stream, one step, one checkpoint, two facts.
func BenchmarkTenInProcessTasks(b *testing.B) {
	env := streamstest.Start(b)
	ops := &engine.Operations{}
	ops.Register("noop", func(context.Context, map[string]any) (map[string]any, error) { return nil, nil })
	eng := openEngine(b, env, ops)
	bld := model.NewBuilder("ten").StartEvent("start")
	ids := []string{"start"}
	for i := range 10 {
		id := fmt.Sprintf("task%d", i)
		bld.ServiceTask(id, "noop")
		ids = append(ids, id)
	}
	bld.EndEvent("end")
	bld.Sequence(append(ids, "end")...)
	ctx := context.Background()
	if _, err := eng.Deploy(ctx, build(b, bld)); err != nil {
		b.Fatal(err)
	}
	done := collectFacts(b, env.Conn, "ten", instance.FactCompleted, b.N)
	b.ResetTimer()
	var next atomic.Int64
	b.SetParallelism(32) // starts in flight, as concurrent clients would have
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := eng.Start(ctx, "ten", nil, engine.InstanceID(fmt.Sprintf("i%d", next.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	done.wait(b, 5*time.Minute)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
}
