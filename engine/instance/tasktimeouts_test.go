package instance

import (
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// timeoutListener is a timeout task listener over timer tm.
func timeoutListener(l model.Listener, tm model.Timer) model.NodeOption {
	l.Event, l.Timer = model.ListenTimeout, &tm
	return model.ListenTask(l)
}

// timeoutWaits are the timeout listener waits of s, by listener index.
func timeoutWaits(s *State) map[int]*Wait {
	out := map[int]*Wait{}
	for _, w := range s.Waits {
		if w.Kind == TaskTimeoutWait {
			out[w.Listener.Index] = w
		}
	}
	return out
}

// fireTimeout fires the wait of timeout listener i, expecting it applied.
func fireTimeout(t *testing.T, s *State, env *testEnv, i int) {
	t.Helper()
	w, ok := timeoutWaits(s)[i]
	if !ok {
		t.Fatalf("no timeout wait of listener %d; waits %s", i, dumpWaits(s))
	}
	env.Now = w.Due
	if n := apply(t, s, env, timerEvent(w)); n != 1 {
		t.Fatalf("timeout %s applied %d", w.ID, n)
	}
}

// A timeout listener runs when its timer fires, counted from the task's
// creation, and the task stays open: what it changes of the task is on
// the task's record (an assignee fires the assignment listeners), what
// it sets is written; a cycle fires again while the task is open, and
// completing the task takes back the timers left.
func TestTimeoutTaskListener(t *testing.T) {
	b := approval(
		timeoutListener(model.Listener{Language: "javascript",
			Source: `task.setPriority(task.getPriority() + 10); execution.setVariable("nags", nags + 1)`}, model.Cycle("R2/PT1H")),
		timeoutListener(model.Listener{ID: "escalate", Field: "assignee", Source: `"boss"`}, model.Duration("PT30M")),
		model.ListenTask(model.Listener{Event: model.ListenAssignment, Set: "assignedTo", Source: "task.assignee"}),
	)
	s, env := run(t, b, map[string]any{"nags": 0})
	created := env.Now
	id := openTask(t, s, "review").ID
	ws := timeoutWaits(s)
	if len(ws) != 2 || !ws[0].Due.Equal(created.Add(time.Hour)) || !ws[1].Due.Equal(created.Add(30*time.Minute)) {
		t.Fatalf("timeout waits %s", dumpWaits(s))
	}

	flush(s)
	fireTimeout(t, s, env, 1)
	rec := record(t, s, id)
	if rec.Assignee != "boss" || rec.State != TaskAssigned || rec.Priority != DefaultTaskPriority {
		t.Fatalf("after the escalation: %+v", rec)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"assigned:" + id}) {
		t.Errorf("facts %v", got)
	}
	assertVars(t, s.Variables(), map[string]any{"assignedTo": "boss", "nags": int64(0)})
	if _, again := timeoutWaits(s)[1]; again {
		t.Errorf("a duration's timeout was armed again: %s", dumpWaits(s))
	}

	for i, want := range []int{60, 70} {
		flush(s)
		fireTimeout(t, s, env, 0)
		if rec := record(t, s, id); rec.Priority != want || rec.State != TaskAssigned {
			t.Fatalf("nag %d: %+v", i+1, rec)
		}
		assertVars(t, s.Variables(), map[string]any{"nags": int64(i + 1)})
		if w, armed := timeoutWaits(s)[0]; armed != (i == 0) || armed && !w.Due.Equal(created.Add(2*time.Hour)) {
			t.Errorf("after nag %d: waits %s", i+1, dumpWaits(s))
		}
	}
	assertStatus(t, s, Active)
	apply(t, s, env, taskCmd("c1", id, TaskComplete, "boss"))
	assertStatus(t, s, Completed)

	// Completed before they fire, the task's timeouts are cancelled.
	s, env = run(t, b, map[string]any{"nags": 0})
	id = openTask(t, s, "review").ID
	armed := effectWaits(s, ScheduleTimer)
	flush(s)
	apply(t, s, env, taskCmd("c1", id, TaskComplete, "ada"))
	assertStatus(t, s, Completed)
	if got := effectWaits(s, CancelTimer); !sameNodes(got, armed) || len(armed) != 2 {
		t.Errorf("cancelled %v, want the timeouts armed %v", got, armed)
	}
}

// A timer given by an expression is evaluated as the task opens; one
// that cannot be is an incident before the task opens.
func TestTimeoutTaskListenerExpression(t *testing.T) {
	b := approval(timeoutListener(model.Listener{Set: "late", Source: "true"}, model.TimerExpr(model.TimerDuration, "${wait}")))
	s, env := run(t, b, map[string]any{"wait": "PT2H"})
	w := timeoutWaits(s)[0]
	if w == nil || !w.Due.Equal(env.Now.Add(2*time.Hour)) || w.Timer != "PT2H" {
		t.Fatalf("waits %s", dumpWaits(s))
	}
	fireTimeout(t, s, env, 0)
	assertVars(t, s.Variables(), map[string]any{"late": true})

	s, _ = run(t, b, map[string]any{"wait": 5})
	assertIncident(t, s, "review", "timeout task listener 1", "timer duration")
	if len(records(s)) != 0 || len(timeoutWaits(s)) != 0 {
		t.Errorf("a task whose timeout could not be evaluated opened: %+v, waits %s", records(s), dumpWaits(s))
	}
}

// A timeout listener that fails raises an incident at the task and the
// task stays open, unchanged: a retry runs the listener again (a failure
// is the same incident, a success closes it); a resolve takes its work as
// done with the operator's variables; completing the task overtakes it.
// Each failure of a later firing is an incident of its own.
func TestTimeoutTaskListenerFailure(t *testing.T) {
	b := approval(timeoutListener(model.Listener{Language: "javascript",
		Source: `task.setPriority(99); execution.setVariable("reminded", true); if (!ok) { throw new Error("no mail server"); }`},
		model.Cycle("R3/PT1H")))
	s, env := run(t, b, map[string]any{"ok": false})
	id := openTask(t, s, "review").ID
	flush(s)
	fireTimeout(t, s, env, 0)
	inc := assertIncident(t, s, "review", `timeout task listener 1: script "review/task/listener-1"`, "no mail server")
	if task := s.Task(id); task == nil || task.Priority != DefaultTaskPriority || task.State.Finished() {
		t.Fatalf("the failed listener changed the task: %+v", task)
	}
	assertNoVar(t, s.Variables(), "reminded")
	if _, next := timeoutWaits(s)[0]; !next {
		t.Errorf("the cycle's next timeout was not armed: %s", dumpWaits(s))
	}

	// A retry that fails again is the same incident, the task still open.
	apply(t, s, env, Event{ID: "r1", Kind: IncidentRetry, Incident: inc.ID})
	again := assertIncident(t, s, "review", "no mail server")
	if again.ID != inc.ID || again.Attempts != 2 || s.Task(id) == nil {
		t.Fatalf("after a failed retry: incident %+v (was %s), task %+v", again.Record, inc.ID, s.Task(id))
	}

	// The operator fixes the cause; the retry succeeds and closes it.
	apply(t, s, env, Event{ID: "v1", Kind: SetVars, Vars: map[string]any{"ok": true}})
	flush(s)
	apply(t, s, env, Event{ID: "r2", Kind: IncidentRetry, Incident: inc.ID})
	if len(s.Incidents) != 0 {
		t.Fatalf("incidents after a good retry: %+v", s.Incidents)
	}
	if rec := record(t, s, id); rec.ID != id || rec.Priority != 99 || rec.State.Finished() {
		t.Fatalf("after the retry: %+v", rec)
	}
	assertVars(t, s.Variables(), map[string]any{"reminded": true})

	// The next firing fails: a new incident, which a resolve closes.
	apply(t, s, env, Event{ID: "v2", Kind: SetVars, Vars: map[string]any{"ok": false, "reminded": false}})
	fireTimeout(t, s, env, 0)
	second := assertIncident(t, s, "review", "no mail server")
	if second.ID == inc.ID {
		t.Fatalf("the second failure reuses incident %s", inc.ID)
	}
	apply(t, s, env, Event{ID: "x1", Kind: IncidentResolve, Incident: second.ID, Vars: map[string]any{"reminded": "by hand"}})
	if len(s.Incidents) != 0 || s.Task(id) == nil {
		t.Fatalf("after the resolve: incidents %+v, task %+v", s.Incidents, s.Task(id))
	}
	assertVars(t, s.Variables(), map[string]any{"reminded": "by hand"})

	// The last firing fails; completing the task overtakes its incident.
	fireTimeout(t, s, env, 0)
	assertIncident(t, s, "review", "no mail server")
	apply(t, s, env, taskCmd("c1", id, TaskComplete, "ada"))
	assertStatus(t, s, Completed)
	if len(s.Incidents) != 0 {
		t.Errorf("incidents after the task completed: %+v", s.Incidents)
	}
}
