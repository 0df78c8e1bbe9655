package instance

import (
	"reflect"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// A job the store lost is queued again as it was queued first: same id,
// topic, inputs, policy and enqueue time; the deliveries the engine knew
// of the lost message are forgotten; a job the instance no longer waits
// on is not queued again.
func TestRearmJob(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		ServiceTask("charge", "", model.WithWorker("pay", model.WithWorkerTrust(jobs.WorkerTrusted), model.WithRetryPolicy(jobs.RetrySpec{Kind: jobs.RetryFixed, MaxAttempts: 5, Delay: time.Second}))).
		EndEvent("e").Sequence("s", "charge", "e")
	s, env := run(t, b, map[string]any{"amount": 42})
	first := effects(s, EnqueueJob)
	if len(first) != 1 {
		t.Fatalf("enqueued %d jobs, want 1", len(first))
	}
	flush(s)
	w := waitAt(t, s, "charge")
	w.Job.Seq, w.Job.Delivery, w.Job.Nacked = 17, 3, 2
	env.Now = env.Now.Add(time.Hour)

	if n := apply(t, s, env, Event{ID: "r1", Kind: Rearm, Wait: w.ID}); n != 1 {
		t.Fatalf("rearm applied %d, want 1", n)
	}
	again := effects(s, EnqueueJob)
	if len(again) != 1 || !reflect.DeepEqual(again[0], first[0]) {
		t.Fatalf("queued again %+v, want as first %+v", again, first)
	}
	if again[0].Job.Policy == nil || again[0].Job.Policy.Retry.MaxAttempts != 5 {
		t.Errorf("the trusted worker's policy did not travel: %+v", again[0].Job.Policy)
	}
	if st := waitAt(t, s, "charge").Job; st.Seq != 0 || st.Delivery != 0 || st.Nacked != 0 {
		t.Errorf("job state after rearm %+v, want the lost message's deliveries forgotten", st)
	}
	flush(s)
	apply(t, s, env, jobDoneEvent(w, nil))
	assertStatus(t, s, Completed)
	flush(s)
	if n := apply(t, s, env, Event{ID: "r2", Kind: Rearm, Wait: w.ID}); n != 0 || len(s.Outbox) != 0 {
		t.Fatalf("rearm of a finished job applied %d, outbox %+v", n, s.Outbox)
	}
}

// A timer the store lost is scheduled again for its due time, at its
// firing; a rearm naming another firing, or a wait that is gone (fired),
// is not applied.
func TestRearmTimer(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").TimerCatchEvent("nap", model.Duration("PT1M")).
		EndEvent("e").Sequence("s", "nap", "e")
	s, env := run(t, b, nil)
	flush(s)
	w := waitAt(t, s, "nap")
	if n := apply(t, s, env, Event{ID: "other", Kind: Rearm, Wait: w.ID, Firing: w.Firing + 1}); n != 0 {
		t.Fatalf("a rearm of another firing applied")
	}
	if n := apply(t, s, env, Event{ID: "r", Kind: Rearm, Wait: w.ID, Firing: w.Firing}); n != 1 {
		t.Fatalf("rearm applied %d, want 1", n)
	}
	got := effects(s, ScheduleTimer)
	if len(got) != 1 || got[0].Wait != w.ID || !got[0].Due.Equal(w.Due) || got[0].Firing != w.Firing {
		t.Fatalf("scheduled %+v, want wait %s due %s firing %d", got, w.ID, w.Due, w.Firing)
	}
	flush(s)
	fired := fire(t, s, env, "nap")
	assertStatus(t, s, Completed)
	flush(s)
	if n := apply(t, s, env, Event{ID: "late", Kind: Rearm, Wait: fired.ID, Firing: fired.Firing}); n != 0 || len(s.Outbox) != 0 {
		t.Fatalf("a rearm of a fired timer applied %d, outbox %+v", n, s.Outbox)
	}
}
