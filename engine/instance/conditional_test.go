package instance

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// writers adds a branch of jobs w1..wn, one after the other, beside
// whatever starts at node main, from a parallel fork after the start
// event: completing each writes its output, which is what conditions see.
func writers(b *model.Builder, main string, n int) *model.Builder {
	b.StartEvent("start").ParallelGateway("fork").Flow("start", "fork").Flow("fork", main)
	prev := "fork"
	for i := 1; i <= n; i++ {
		id := "w" + string(rune('0'+i))
		b.ServiceTask(id, "", model.WithWorker("w")).Flow(prev, id)
		prev = id
	}
	return b.EndEvent("wEnd").Flow(prev, "wEnd")
}

// complete completes the job at node with output out.
func completeJob(t *testing.T, s *State, env *testEnv, node string, out map[string]any) {
	t.Helper()
	if n := apply(t, s, env, jobDoneEvent(waitAt(t, s, node), out)); n != 1 {
		t.Fatalf("job at %s: applied %d", node, n)
	}
}

// An intermediate conditional catch passes at once when its condition
// holds on arrival; else it waits, and a later write that makes it hold
// moves the token on in the step that wrote it. A missing variable in an
// ordering comparison does not hold.
func TestConditionalCatch(t *testing.T) {
	b := model.NewBuilder("cc")
	writers(b, "wait", 2).ConditionalCatchEvent("wait", "${x > 5}").
		ScriptTask("after", "x * 2", "y").EndEvent("end").Sequence("wait", "after", "end")

	s, _ := run(t, b, map[string]any{"x": int64(10)})
	if slices.ContainsFunc(s.Waits, func(w *Wait) bool { return w.Node == "wait" }) {
		t.Fatalf("the catch waits although its condition held on arrival: %s", dumpWaits(s))
	}
	assertVars(t, s.Variables(), map[string]any{"x": int64(10), "y": int64(20)})

	s, env := run(t, b, nil)
	if w := waitAt(t, s, "wait"); w.Kind != ConditionalWait || w.Track == "" {
		t.Fatalf("wait %+v", w)
	}
	if slices.ContainsFunc(s.Outbox, func(e Effect) bool { return e.Wait == waitAt(t, s, "wait").ID }) {
		t.Fatalf("a conditional wait published an effect: %+v", s.Outbox)
	}
	completeJob(t, s, env, "w1", map[string]any{"x": int64(3)})
	waitAt(t, s, "wait")
	completeJob(t, s, env, "w2", map[string]any{"x": int64(7)})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"x": int64(7), "y": int64(14)})
}

// An interrupting conditional boundary fires at once when its condition
// holds as the activity is entered (the job it queued is taken back), or
// on the write that makes it hold (the job is cancelled).
func TestInterruptingConditionalBoundary(t *testing.T) {
	b := model.NewBuilder("cb")
	writers(b, "work", 1).ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").Flow("work", "end").
		ConditionalBoundary("stop", "work", "${cancel == true}", true).ScriptTask("mark", "true", "stopped").
		EndEvent("stopEnd").Sequence("stop", "mark", "stopEnd")

	s, _ := run(t, b, map[string]any{"cancel": true})
	if got := effectWaits(s, EnqueueJob); len(got) != 1 { // w1's only
		t.Fatalf("EnqueueJob %v, want w1's only (work's taken back)", got)
	}
	waitAt(t, s, "w1")
	assertVars(t, s.Variables(), map[string]any{"cancel": true, "stopped": true})

	s, env := run(t, b, map[string]any{"cancel": false})
	work := waitAt(t, s, "work")
	flush(s)
	completeJob(t, s, env, "w1", map[string]any{"cancel": true})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"cancel": true, "stopped": true})
	if got := effectWaits(s, CancelJob); !slices.Equal(got, []string{work.ID}) {
		t.Errorf("CancelJob %v, want work's", got)
	}
}

// completeAll completes every job at node.
func completeAll(t *testing.T, s *State, env *testEnv, node string) {
	t.Helper()
	for _, w := range slices.Clone(s.Waits) {
		if w.Kind == JobWait && w.Node == node {
			if n := apply(t, s, env, jobDoneEvent(w, nil)); n != 1 {
				t.Fatalf("job %s: applied %d", w.ID, n)
			}
		}
	}
}

// jobsAt counts the job waits at node.
func jobsAt(s *State, node string) int {
	n := 0
	for _, w := range s.Waits {
		if w.Kind == JobWait && w.Node == node {
			n++
		}
	}
	return n
}

// A non-interrupting conditional boundary starts a token on each write
// that finds its condition true, and stays open; camunda:variableName and
// camunda:variableEvents restrict which writes re-evaluate it. (Its
// tokens park on a job: a path that wrote a variable would be a write
// that re-evaluates it, as in Camunda 7.)
func TestNonInterruptingConditionalBoundary(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opts  []model.NodeOption
		ticks int
	}{
		{"every write", nil, 3}, // n=1, m=1 (n still 1), n=2
		{"variableName n", []model.NodeOption{model.ConditionVariable("n")}, 2},             // m=1 is not n
		{"create only", []model.NodeOption{model.ConditionEvents(model.VariableCreate)}, 2}, // n=2 is an update
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := model.NewBuilder("nb")
			writers(b, "work", 3).ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").Flow("work", "end").
				ConditionalBoundary("tick", "work", "n > 0", false, tt.opts...).
				ServiceTask("tickJob", "", model.WithWorker("t")).EndEvent("tickEnd").Sequence("tick", "tickJob", "tickEnd")
			s, env := run(t, b, nil)
			completeJob(t, s, env, "w1", map[string]any{"n": int64(1)})
			completeJob(t, s, env, "w2", map[string]any{"m": int64(1)})
			completeJob(t, s, env, "w3", map[string]any{"n": int64(2)})
			if got := jobsAt(s, "tickJob"); got != tt.ticks {
				t.Fatalf("fired %d times, want %d", got, tt.ticks)
			}
			if w := waitAt(t, s, "tick"); w.Kind != ConditionalWait {
				t.Fatalf("tick wait %+v", w)
			}
			completeJob(t, s, env, "work", nil)
			completeAll(t, s, env, "tickJob")
			assertStatus(t, s, Completed)
			if len(s.Waits) != 0 {
				t.Errorf("waits left: %s", dumpWaits(s))
			}
		})
	}
}

// A conditional event sub-process start is evaluated when its scope
// starts, before the scope's start event runs: an interrupting one that
// holds then means the main path never starts. A non-interrupting one
// runs beside the scope on each write that finds it true.
func TestConditionalEventSub(t *testing.T) {
	b := espWork()
	b.EventSubProcess("stopEsp", true).ConditionalStartEvent("stop", "${cancel == true}").
		ScriptTask("mark", "true", "stopped").EndEvent("stopEnd").Sequence("stop", "mark", "stopEnd")
	s, _ := run(t, b, map[string]any{"cancel": true})
	assertStatus(t, s, Completed)
	if got := effectWaits(s, EnqueueJob); len(got) != 0 {
		t.Fatalf("EnqueueJob %v: the main path started", got)
	}
	assertVars(t, s.Variables(), map[string]any{"cancel": true, "stopped": true})

	s, env := run(t, b, nil)
	stop := waitAt(t, s, "stop")
	if stop.Kind != ConditionalWait || stop.Scope != RootScope || stop.Track != "" {
		t.Fatalf("stop wait %+v", stop)
	}
	completeJob(t, s, env, "work", map[string]any{"cancel": false})
	assertStatus(t, s, Completed)
	assertNoVar(t, s.Variables(), "stopped")

	nb := model.NewBuilder("esp")
	writers(nb, "work", 2).ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").Flow("work", "end")
	nb.EventSubProcess("noteEsp", false).ConditionalStartEvent("note", "${level >= 2}").
		ServiceTask("noteJob", "", model.WithWorker("n")).EndEvent("noteEnd").Sequence("note", "noteJob", "noteEnd")
	s, env = run(t, nb, nil)
	completeJob(t, s, env, "w1", map[string]any{"level": int64(2)})
	completeJob(t, s, env, "w2", map[string]any{"level": int64(3)})
	waitAt(t, s, "work")
	if got := jobsAt(s, "noteJob"); got != 2 {
		t.Fatalf("fired %d times, want 2", got)
	}
	completeJob(t, s, env, "work", nil)
	assertStatus(t, s, Active) // the event sub-processes run on
	completeAll(t, s, env, "noteJob")
	assertStatus(t, s, Completed)
	if len(s.Waits) != 0 {
		t.Errorf("waits left: %s", dumpWaits(s))
	}
}

// Evaluation is top-down and scoped: when one write makes the conditions
// of a sub-process's boundary and of a boundary inside it hold, the outer
// one fires and cancels the inner one. A write to a variable of the
// sub-process's own scope, from inside it, reaches the sub-process's
// boundary (it sees that scope) while the sub-process runs.
func TestConditionalTopDownAndScoped(t *testing.T) {
	b := model.NewBuilder("td")
	writers(b, "sub", 1).EndEvent("end").Flow("sub", "end")
	sub := b.SubProcess("sub", model.Input("local", "0"))
	sub.StartEvent("ss").ServiceTask("inner", "", model.WithWorker("w")).EndEvent("se").Sequence("ss", "inner", "se")
	sub.ConditionalBoundary("innerStop", "inner", "go == true", true).ScriptTask("innerMark", "true", "innerFired").
		EndEvent("ie").Sequence("innerStop", "innerMark", "ie")
	b.ConditionalBoundary("outerStop", "sub", "go == true", true).ScriptTask("outerMark", "true", "outerFired").
		EndEvent("oe").Sequence("outerStop", "outerMark", "oe")
	b.ConditionalBoundary("localStop", "sub", "local == 1", false).ScriptTask("localMark", "true", "localFired").
		EndEvent("le").Sequence("localStop", "localMark", "le")

	s, env := run(t, b, nil)
	// inner's output writes local, the sub-process's variable, before its
	// token reaches the sub-process's end.
	completeJob(t, s, env, "inner", map[string]any{"local": int64(1)})
	assertVars(t, s.Variables(), map[string]any{"localFired": true})
	assertNoVar(t, s.Variables(), "local")

	s, env = run(t, b, nil)
	completeJob(t, s, env, "w1", map[string]any{"go": true})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"go": true, "outerFired": true})
	assertNoVar(t, s.Variables(), "innerFired")
}

// A non-interrupting conditional event whose own path writes a variable
// that re-evaluates it keeps firing in the same step: the step's node
// budget fails the instance, naming the event, instead of spinning.
func TestConditionalFiringItself(t *testing.T) {
	b := model.NewBuilder("self")
	writers(b, "work", 1).ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").Flow("work", "end").
		ConditionalBoundary("tick", "work", "n > 0", false).
		ScriptTask("count", "(ticks ?? 0) + 1", "ticks").EndEvent("tickEnd").Sequence("tick", "count", "tickEnd")
	env := newEnv(build(t, b), nil)
	env.MaxNodes = 100
	s := start(t, env, nil)
	completeJob(t, s, env, "w1", map[string]any{"n": int64(1)})
	if s.Status != Failed || s.Failure == nil || !strings.Contains(s.Failure.Message, "more than 100 nodes executed") {
		t.Fatalf("status %s, failure %+v; want failed on the node budget", s.Status, s.Failure)
	}
}
