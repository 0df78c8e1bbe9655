package instance

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// listenerWait is the job wait track t's node has for a listener, failing
// the test if the instance waits on anything else there.
func listenerWait(t *testing.T, s *State, node, topic string, at ListenerAt) *Wait {
	t.Helper()
	w := waitAt(t, s, node)
	if w.Kind != JobWait || w.Listener == nil || *w.Listener != at || w.Job.Topic != topic {
		t.Fatalf("wait at %s = %+v (listener %+v), want the job of %s listener %d on topic %s\n%s", node, w, w.Listener, at.Event, at.Index+1, topic, dumpWaits(s))
	}
	return w
}

// enqueued is the input of the job queued for wait w in this step.
func enqueued(t *testing.T, s *State, w *Wait) *jobs.Job {
	t.Helper()
	for _, e := range effects(s, EnqueueJob) {
		if e.Wait == w.ID {
			return e.Job
		}
	}
	t.Fatalf("no job queued for wait %s; queued %v", w.ID, effectWaits(s, EnqueueJob))
	return nil
}

// Zeebe's execution listeners: the start listeners' jobs one after the
// other, after the inputs and before the task's job, what they complete
// with the task's locals; the end listener's after the outputs, what it
// completes with written out; a failed listener's incident retried runs
// that listener only.
func TestJobListeners(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("work", model.WithHeaders(map[string]string{"region": "eu"})),
			model.Input("base", "amount"), model.Output("total", "result + extra"),
			model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "prep"}),
			model.ListenJob(model.JobListener{Event: model.ListenEnd, Type: "audit", Retries: 1}),
			model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "check", Retries: 2})).
		EndEvent("e").Sequence("s", "work", "e")
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"amount": 2})

	prep := listenerWait(t, s, "work", "prep", ListenerAt{Event: model.ListenStart, Index: 0})
	if job := enqueued(t, s, prep); job.Input["base"] != int64(2) || job.Input["amount"] != int64(2) || job.Headers["region"] != "eu" {
		t.Fatalf("prep's job %+v: want every variable, the inputs too, and the task's headers", job)
	}
	flush(s)
	apply(t, s, env, jobDoneEvent(prep, map[string]any{"extra": 10}))
	check := listenerWait(t, s, "work", "check", ListenerAt{Event: model.ListenStart, Index: 2})
	if job := enqueued(t, s, check); job.Input["extra"] != int64(10) || job.Policy == nil || job.Policy.Retry.MaxAttempts != 2 {
		t.Fatalf("check's job %+v (policy %+v): want prep's extra and 2 attempts", job, job.Policy)
	}
	flush(s)
	apply(t, s, env, Event{ID: "f1", Kind: JobOutcome, Wait: check.ID, Outcome: &jobs.Terminal{Kind: jobs.Failed, Message: "boom"}})
	inc := assertIncident(t, s, "work", `start execution listener 3 (job type "check"): boom`)
	flush(s)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	again := listenerWait(t, s, "work", "check", ListenerAt{Event: model.ListenStart, Index: 2})
	if again.ID == check.ID || len(effects(s, EnqueueJob)) != 1 || enqueued(t, s, again).Input["extra"] != int64(10) {
		t.Fatalf("the retry queued %v (first %s, input %v): want check's job alone, again, with prep's extra", effectWaits(s, EnqueueJob), check.ID, enqueued(t, s, again).Input)
	}
	flush(s)
	apply(t, s, env, jobDoneEvent(again, nil))

	work := waitAt(t, s, "work")
	if work.Listener != nil || work.Job.Topic != "work" {
		t.Fatalf("after the start listeners: wait %+v, want the task's job", work)
	}
	if job := enqueued(t, s, work); job.Input["extra"] != int64(10) || job.Input["base"] != int64(2) {
		t.Fatalf("the task's job input %v: want its inputs and the listeners' locals", job.Input)
	}
	apply(t, s, env, jobDoneEvent(work, map[string]any{"result": 5}))
	audit := listenerWait(t, s, "work", "audit", ListenerAt{Event: model.ListenEnd, Index: 1})
	if job := enqueued(t, s, audit); job.Input["total"] != int64(15) {
		t.Fatalf("audit's job input %v: want the output total", job.Input)
	}
	if !slices.Equal(s.ActiveNodes(), []string{"work"}) {
		t.Fatalf("active %v while the end listener runs", s.ActiveNodes())
	}
	apply(t, s, env, jobDoneEvent(audit, map[string]any{"audited": true}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"amount": int64(2), "total": int64(15), "audited": true})
	assertNoVar(t, s.Variables(), "extra", "base", "result")
}

// A listener's BPMN error is an incident; on a none end event and a
// gateway the listeners run where Zeebe runs them.
func TestJobListenerKinds(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		ExclusiveGateway("g", model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "route"})).
		EndEvent("e", model.ListenJob(model.JobListener{Event: model.ListenEnd, Type: "bye"})).
		Sequence("s", "g", "e")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	route := listenerWait(t, s, "g", "route", ListenerAt{Event: model.ListenStart, Index: 0})
	apply(t, s, env, Event{ID: "x", Kind: JobOutcome, Wait: route.ID, Outcome: &jobs.Terminal{Kind: jobs.Errored, ErrorCode: "NO"}})
	inc := assertIncident(t, s, "g", `threw BPMN error "NO"; an execution listener may not throw one`)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	apply(t, s, env, jobDoneEvent(listenerWait(t, s, "g", "route", ListenerAt{Event: model.ListenStart, Index: 0}), map[string]any{"way": "east"}))
	bye := listenerWait(t, s, "e", "bye", ListenerAt{Event: model.ListenEnd, Index: 0})
	apply(t, s, env, jobDoneEvent(bye, map[string]any{"said": "bye"}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"said": "bye"})
}

func TestJobListenerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    *model.Builder
		want string
	}{
		{"start on a start event", model.NewBuilder("p").StartEvent("s", model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "x"})).EndEvent("e").Sequence("s", "e"),
			"Zeebe runs no start listener on a start or boundary event"},
		{"end on a gateway", model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g", model.ListenJob(model.JobListener{Event: model.ListenEnd, Type: "x"})).EndEvent("e").Sequence("s", "g", "e"),
			"Zeebe runs no end listener on a gateway"},
		{"no type", model.NewBuilder("p").StartEvent("s").Task("t", model.ListenJob(model.JobListener{Event: model.ListenEnd})).EndEvent("e").Sequence("s", "t", "e"),
			"has no job type"},
		{"take", model.NewBuilder("p").StartEvent("s").Task("t", model.ListenJob(model.JobListener{Event: model.ListenTake, Type: "x"})).EndEvent("e").Sequence("s", "t", "e"),
			`the event "take" is not start or end`},
	} {
		if _, err := tc.b.Build(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The process's Zeebe execution listeners: start before the start event
// (what it completes with is a process variable), end when the last
// token ends; a failed end listener's retry runs it again.
func TestProcessJobListeners(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").Task("t").EndEvent("e").Sequence("s", "t", "e")
	p := build(t, b)
	p.JobListeners = []model.JobListener{{Event: model.ListenStart, Type: "open"}, {Event: model.ListenEnd, Type: "close"}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	env := newEnv(p, nil)
	s := start(t, env, nil)
	open := listenerWait(t, s, "s", "open", ListenerAt{Event: model.ListenStart, Index: 0, Process: true})
	if len(s.Passed) > 0 {
		t.Fatalf("passed %v before the start listener", s.Passed)
	}
	apply(t, s, env, jobDoneEvent(open, map[string]any{"opened": true}))
	closing := listenerWait(t, s, "e", "close", ListenerAt{Event: model.ListenEnd, Index: 1, Process: true})
	assertStatus(t, s, Active)
	apply(t, s, env, Event{ID: "f", Kind: JobOutcome, Wait: closing.ID, Outcome: &jobs.Terminal{Kind: jobs.Failed, Message: "archive down"}})
	inc := assertIncident(t, s, "e", `end execution listener 2 (job type "close") of the process: archive down`)
	apply(t, s, env, command(IncidentRetry, inc, "r1"))
	again := listenerWait(t, s, "e", "close", ListenerAt{Event: model.ListenEnd, Index: 1, Process: true})
	apply(t, s, env, jobDoneEvent(again, map[string]any{"closed": true}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"opened": true, "closed": true})
}

// A listener's type may be an expression, evaluated as it runs; one that
// gives no type is an incident naming the listener, and a retry
// evaluates it again.
func TestJobListenerTypeExpression(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		Task("t", model.ListenJob(model.JobListener{Event: model.ListenEnd, TypeExpr: `="audit-" + region`})).
		EndEvent("e").Sequence("s", "t", "e")
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"region": "eu"})
	w := listenerWait(t, s, "t", "audit-eu", ListenerAt{Event: model.ListenEnd, Index: 0})
	apply(t, s, env, jobDoneEvent(w, nil))
	assertStatus(t, s, Completed)

	s = start(t, env, map[string]any{"region": 7})
	inc := assertIncident(t, s, "t", `end execution listener 1: type "=\"audit-\" + region"`)
	apply(t, s, env, Event{ID: "v", Kind: SetVars, Vars: map[string]any{"region": "us"}})
	apply(t, s, env, command(IncidentRetry, inc, "r1"))
	listenerWait(t, s, "t", "audit-us", ListenerAt{Event: model.ListenEnd, Index: 0})
}

// End listeners on end events that throw: a signal end event's after its
// broadcast, an escalation end event's after its escalation.
func TestJobListenersOnThrowingEndEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    *model.Builder
	}{
		{"signal", model.NewBuilder("p").StartEvent("s").
			SignalEndEvent("e", "done", model.ListenJob(model.JobListener{Event: model.ListenEnd, Type: "bye"})).Sequence("s", "e")},
		{"escalation", model.NewBuilder("p").StartEvent("s").
			EscalationEndEvent("e", "LATE", model.ListenJob(model.JobListener{Event: model.ListenEnd, Type: "bye"})).Sequence("s", "e")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(build(t, tc.b), nil)
			s := start(t, env, nil)
			w := listenerWait(t, s, "e", "bye", ListenerAt{Event: model.ListenEnd, Index: 0})
			assertStatus(t, s, Active)
			apply(t, s, env, jobDoneEvent(w, map[string]any{"said": "bye"}))
			assertStatus(t, s, Completed)
			assertVars(t, s.Variables(), map[string]any{"said": "bye"})
		})
	}
}

// The event an event-based gateway waited for runs its start listeners
// when it happens, then completes with what it carried.
func TestJobListenerAfterEventGateway(t *testing.T) {
	b := model.NewBuilder("race").StartEvent("start").EventBasedGateway("g").
		MessageCatchEvent("paid", "paid", "orderId", model.Output("amount", "sum"),
			model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "seen"})).
		TimerCatchEvent("late", model.Duration("PT1H")).
		EndEvent("end").
		Flow("start", "g").Flow("g", "paid").Flow("g", "late").Sequence("paid", "end").Sequence("late", "end")
	s, env := run(t, b, map[string]any{"orderId": 17})
	correlate(t, s, env, "paid", 1, map[string]any{"sum": 20})
	w := listenerWait(t, s, "paid", "seen", ListenerAt{Event: model.ListenStart, Index: 0})
	assertStatus(t, s, Active)
	apply(t, s, env, Event{ID: "f", Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Failed, Message: "down"}})
	inc := assertIncident(t, s, "paid", "start execution listener 1")
	apply(t, s, env, command(IncidentRetry, inc, "r1"))
	w = listenerWait(t, s, "paid", "seen", ListenerAt{Event: model.ListenStart, Index: 0})
	apply(t, s, env, jobDoneEvent(w, map[string]any{"note": "seen"}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"orderId": int64(17), "amount": int64(20)})
}

// A listener's retries may be an expression too, evaluated as it runs.
func TestJobListenerRetriesExpression(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		Task("t", model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "audit", RetriesExpr: "tries + 1"})).
		EndEvent("e").Sequence("s", "t", "e")
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"tries": 4})
	w := listenerWait(t, s, "t", "audit", ListenerAt{Event: model.ListenStart, Index: 0})
	if job := enqueued(t, s, w); job.Policy == nil || job.Policy.Retry.MaxAttempts != 5 {
		t.Fatalf("policy %+v, want 5 attempts", job.Policy)
	}
	s = start(t, env, map[string]any{"tries": "many"})
	assertIncident(t, s, "t", `start execution listener 1: retries "tries + 1"`)
}

// A joining parallel gateway runs its start listeners once, when the
// last token arrives.
func TestJobListenerOnParallelJoin(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ParallelGateway("fork").Task("a").Task("b").
		ParallelGateway("join", model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "joined"})).EndEvent("e").
		Sequence("s", "fork").Flow("fork", "a").Flow("fork", "b").Flow("a", "join").Flow("b", "join").Sequence("join", "e")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	w := listenerWait(t, s, "join", "joined", ListenerAt{Event: model.ListenStart, Index: 0})
	if len(s.Tracks) != 1 || len(effects(s, EnqueueJob)) != 1 {
		t.Fatalf("tracks %d, jobs %v: want one joined track and one listener job", len(s.Tracks), effectWaits(s, EnqueueJob))
	}
	apply(t, s, env, jobDoneEvent(w, map[string]any{"x": 1}))
	assertStatus(t, s, Completed)
}

// A message start event that maps its message: the process's start
// listeners run first, then the start event completes with the message.
func TestProcessJobListenersAtAMessageStart(t *testing.T) {
	b := model.NewBuilder("p").MessageStartEvent("s", "order", model.Output("total", "amount")).EndEvent("e").Sequence("s", "e")
	p := build(t, b)
	p.JobListeners = []model.JobListener{{Event: model.ListenStart, Type: "open"}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	env := newEnv(p, nil)
	s, err := StartFrom("i1", env.Env, map[string]any{"amount": 12}, Begin{Node: "s", Message: &Correlation{Name: "order", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	w := listenerWait(t, s, "s", "open", ListenerAt{Event: model.ListenStart, Index: 0, Process: true})
	apply(t, s, env, jobDoneEvent(w, map[string]any{"opened": true}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"total": int64(12), "opened": true})
}

// A terminate end event's end listeners run before it terminates its
// scope; the other tokens go on meanwhile.
func TestJobListenerOnTerminateEnd(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ParallelGateway("fork").
		ServiceTask("slow", "", model.WithWorker("slow")).EndEvent("done").
		TerminateEndEvent("stop", model.ListenJob(model.JobListener{Event: model.ListenEnd, Type: "bye"})).
		Sequence("s", "fork").Flow("fork", "slow").Flow("fork", "stop").Sequence("slow", "done")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	w := listenerWait(t, s, "stop", "bye", ListenerAt{Event: model.ListenEnd, Index: 0})
	slow := waitAt(t, s, "slow")
	flush(s)
	apply(t, s, env, jobDoneEvent(w, nil))
	assertStatus(t, s, Completed)
	if got := effectWaits(s, CancelJob); len(got) != 1 || got[0] != slow.ID {
		t.Fatalf("cancelled jobs %v, want slow's %s", got, slow.ID)
	}
}

// A terminate end event that ends the instance runs the process's end
// listeners after cancelling the other tokens.
func TestProcessJobListenersOnTerminate(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ParallelGateway("fork").
		ServiceTask("slow", "", model.WithWorker("slow")).EndEvent("done").
		TerminateEndEvent("stop").
		Sequence("s", "fork").Flow("fork", "slow").Flow("fork", "stop").Sequence("slow", "done")
	p := build(t, b)
	p.JobListeners = []model.JobListener{{Event: model.ListenEnd, Type: "close"}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	env := newEnv(p, nil)
	s := start(t, env, nil)
	w := listenerWait(t, s, "stop", "close", ListenerAt{Event: model.ListenEnd, Index: 0, Process: true})
	for _, x := range s.Waits {
		if x.Node == "slow" {
			t.Fatalf("slow still waits: %s", dumpWaits(s))
		}
	}
	if len(s.Tracks) != 1 {
		t.Fatalf("tracks %d: want the other token gone", len(s.Tracks))
	}
	apply(t, s, env, jobDoneEvent(w, map[string]any{"closed": true}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"closed": true})
}

// A joining inclusive gateway runs its start listeners once, when it
// fires.
func TestJobListenerOnInclusiveJoin(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("fork").Task("a").Task("b").
		InclusiveGateway("join", model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "joined"})).EndEvent("e").
		Sequence("s", "fork").Flow("fork", "a", model.When("x > 0")).Flow("fork", "b", model.When("x > 1")).
		Flow("a", "join").Flow("b", "join").Sequence("join", "e")
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"x": 5})
	w := listenerWait(t, s, "join", "joined", ListenerAt{Event: model.ListenStart, Index: 0})
	if len(s.Tracks) != 1 || len(effects(s, EnqueueJob)) != 1 {
		t.Fatalf("tracks %d, jobs %v: want one joined track and one listener job", len(s.Tracks), effectWaits(s, EnqueueJob))
	}
	apply(t, s, env, jobDoneEvent(w, nil))
	assertStatus(t, s, Completed)

	s = start(t, env, map[string]any{"x": 1}) // one branch: the join fires on its token alone
	w = listenerWait(t, s, "join", "joined", ListenerAt{Event: model.ListenStart, Index: 0})
	apply(t, s, env, jobDoneEvent(w, nil))
	assertStatus(t, s, Completed)
}

// On a multi-instance activity the listeners run for each iteration: its
// start listener's variables are the iteration's, its end listener runs
// before the iteration's output element is collected.
func TestJobListenersPerIteration(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		Task("each", model.WithLoop(model.Loop{Collection: "items", ElementVariable: "item", OutputCollection: "outs", OutputElement: "tag + item"}),
			model.ListenJob(model.JobListener{Event: model.ListenStart, Type: "prep"}),
			model.ListenJob(model.JobListener{Event: model.ListenEnd, Type: "post"})).
		EndEvent("e").Sequence("s", "each", "e")
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"items": []any{"a", "b"}})
	listenerWaits := func(topic string) []*Wait {
		var out []*Wait
		for _, w := range s.Waits {
			if w.Listener != nil && w.Job.Topic == topic {
				out = append(out, w)
			}
		}
		return out
	}
	preps := listenerWaits("prep")
	if len(preps) != 2 {
		t.Fatalf("prep jobs %s, want one per iteration", dumpWaits(s))
	}
	for i, w := range preps {
		apply(t, s, env, jobDoneEvent(w, map[string]any{"tag": []string{"x-", "y-"}[i]}))
	}
	posts := listenerWaits("post")
	if len(posts) != 2 {
		t.Fatalf("post jobs %s, want one per iteration", dumpWaits(s))
	}
	for _, w := range posts {
		apply(t, s, env, jobDoneEvent(w, nil))
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"items": []any{"a", "b"}, "outs": []any{"x-a", "y-b"}})
}
