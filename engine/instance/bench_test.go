package instance

import (
	"fmt"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// BenchmarkStepTenTasks: start → 10 in-process service tasks (no-op
// operation) → end: Start parks on the first task, then each result is
// applied in a step of its own, which parks on the next.
func BenchmarkStepTenTasks(b *testing.B) {
	bld := model.NewBuilder("ten").StartEvent("start")
	ids := []string{"start"}
	for i := range 10 {
		id := fmt.Sprintf("task%d", i)
		bld.ServiceTask(id, "noop")
		ids = append(ids, id)
	}
	bld.EndEvent("end").Sequence(append(ids, "end")...)
	env := Env{Process: build(b, bld), Now: t0, DefaultTimeout: 30e9}
	vars := map[string]any{"orderId": "o-1", "amount": 1500, "customer": map[string]any{"name": "Ann", "vip": true}}
	done := &OperationResult{Kind: OperationCompleted}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Start("i1", env, vars)
		for err == nil && len(s.Waits) > 0 {
			w := s.Waits[0].ID
			s.Outbox = nil
			_, err = Apply(s, env, OperationEvent(w, done))
		}
		if err != nil || s.Status != Completed {
			b.Fatalf("status %v: %v", s.Status, err)
		}
	}
}

// BenchmarkApplyTimer: Apply one TimerFired to an instance waiting on a
// timer between two script tasks; the instance then runs to its end.
func BenchmarkApplyTimer(b *testing.B) {
	bld := model.NewBuilder("timer").
		StartEvent("start").ScriptTask("before", "amount + 1", "more").
		TimerCatchEvent("wait", model.Duration("PT1M")).
		ScriptTask("after", "more * 2", "double").EndEvent("end").
		Sequence("start", "before", "wait", "after", "end")
	env := Env{Process: build(b, bld), Now: t0}
	vars := map[string]any{"orderId": "o-1", "amount": 1500}
	fired := env
	fired.Now = t0.Add(2 * 60e9)

	const batch = 1024
	states := make([]*State, batch)
	events := make([]Event, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		b.StopTimer()
		for i := range n {
			s, err := Start(fmt.Sprintf("i%d", i), env, vars)
			if err != nil || len(s.Waits) != 1 {
				b.Fatalf("Start: %v", err)
			}
			s.Outbox = nil
			states[i], events[i] = s, timerEvent(s.Waits[0])
		}
		b.StartTimer()
		for i := range n {
			if k, err := Apply(states[i], fired, events[i]); k != 1 || err != nil {
				b.Fatalf("Apply: %d %v", k, err)
			}
		}
		done += n
	}
	b.StopTimer()
	if states[0].Status != Completed {
		b.Fatalf("status %s", states[0].Status)
	}
}
