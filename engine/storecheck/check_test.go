package storecheck_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/engine/storecheck"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func bounded(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func checker(t testing.TB, ctx context.Context, env *streamstest.Env, file string) *storecheck.Checker {
	t.Helper()
	meta, err := env.JS.KeyValue(ctx, streams.MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	lostKV, err := env.JS.KeyValue(ctx, streams.LostBucket)
	if err != nil {
		t.Fatal(err)
	}
	return storecheck.New(storecheck.Config{
		JS: env.JS, Meta: meta, Lost: lostKV, MarksFile: file, Sync: env.Server.Sync, Retention: 7 * 24 * time.Hour,
	})
}

func records(t *testing.T, ctx context.Context, env *streamstest.Env) []lost.Record {
	t.Helper()
	kv, err := env.JS.KeyValue(ctx, streams.LostBucket)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := storecheck.Records(ctx, kv)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func putCheckpoint(t *testing.T, ctx context.Context, env *streamstest.Env, id string) {
	t.Helper()
	kv, err := env.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := streams.Marshal(instance.State{ID: id, ProcessID: "p", Version: 1, Status: instance.Active})
	if _, err := kv.Put(ctx, id, data); err != nil {
		t.Fatal(err)
	}
}

// A stream below its mark (in either place) is a gap, recorded once; the
// marks then follow the stream from where it is.
func TestCheckFindsAStreamThatWentBack(t *testing.T) {
	ctx := bounded(t)
	env := streamstest.Start(t)
	file := filepath.Join(t.TempDir(), "jetbpm-marks")
	c := checker(t, ctx, env, file)
	for _, id := range []string{"i-1", "i-2", "i-3"} {
		putCheckpoint(t, ctx, env, id)
	}
	if err := c.Mark(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	marks, err := lost.DecodeFile(data)
	if err != nil {
		t.Fatal(err)
	}
	instances := streams.KVStream(streams.InstancesBucket)
	if marks.Streams[instances] != 3 {
		t.Fatalf("marks file holds %v, want %s at 3", marks.Streams, instances)
	}
	if _, ok := marks.Streams[streams.KVStream(streams.MetaBucket)]; ok {
		t.Error("the meta bucket is marked, though the marks themselves move it")
	}
	r, err := c.Check(ctx)
	if err != nil || r.Damaged() || r.Recorded != 0 {
		t.Fatalf("check of a whole store: %+v, %v", r, err)
	}

	// The file says the bucket reached 50: as if its tail was lost.
	marks.Streams[instances] = 50
	if err := os.WriteFile(file, marks.EncodeFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	c = checker(t, ctx, env, file)
	r, err = c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Gaps) != 1 || r.Gaps[0] != (lost.Gap{Stream: instances, Marked: 50, Found: 3}) || r.Recorded != 1 {
		t.Fatalf("report %+v, want one gap of %s from 50 to 3, recorded", r, instances)
	}
	recs := records(t, ctx, env)
	if len(recs) != 1 || recs[0].Kind != lost.Stream || recs[0].Status != lost.Open || !strings.Contains(recs[0].Detail, "went back from sequence 50 to 3") {
		t.Fatalf("records %+v", recs)
	}
	if s := lost.Summary(recs); !strings.Contains(s, "1 stream(s) went back (KV_jetbpm-instances)") {
		t.Errorf("summary %q", s)
	}
	// Counted once: the marks now follow the stream from 3.
	if r, err := checker(t, ctx, env, file).Check(ctx); err != nil || len(r.Gaps) != 0 || r.Recorded != 0 {
		t.Fatalf("second check: %+v, %v; want nothing new", r, err)
	}

	// A damaged file is a problem named in the report, not a gap; the
	// meta bucket's copy still counts.
	if err := os.WriteFile(file, []byte("jetbpm-marks 1\nffffffff\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = checker(t, ctx, env, file).Check(ctx)
	if err != nil || len(r.Gaps) != 0 || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "damaged") {
		t.Fatalf("check with a damaged marks file: %+v, %v", r, err)
	}
}

// The cross-check names each instance a job, a timer, an open task, an
// open incident, a message subscription or a signal index entry names
// while it has no checkpoint, with what they know.
func TestCheckFindsInstancesTracesNameWithoutCheckpoints(t *testing.T) {
	ctx := bounded(t)
	env := streamstest.Start(t)
	c := checker(t, ctx, env, "")
	putCheckpoint(t, ctx, env, "i-here")
	now := time.Now().UTC()

	publishJob := func(id, jobID string) {
		body, err := json.Marshal(jobs.Job{ID: jobID, Topic: "charge", Instance: id, ProcessID: "order", Node: "charge-card",
			Input: map[string]any{"amount": 42}, EnqueuedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(streams.JobSubject("charge", jobID))
		m.Data = body
		m.Header.Set(outbox.HeaderInstance, id)
		m.Header.Set(outbox.HeaderJob, jobID)
		if _, err := env.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	publishJob("i-here", "i-here/n1/1")
	publishJob("i-job", "i-job/charge-card/1")

	timer := nats.NewMsg(streams.TimerSubject(0, "i-timer", "w3"))
	timer.Data = []byte("x")
	timer.Header.Set("Nats-Schedule", "@at "+now.Add(time.Hour).Format(time.RFC3339Nano))
	timer.Header.Set("Nats-Schedule-Target", streams.EventSubject(0, "i-timer"))
	if _, err := env.JS.PublishMsg(ctx, timer); err != nil {
		t.Fatal(err)
	}

	tasks, err := env.JS.KeyValue(ctx, streams.TasksBucket)
	if err != nil {
		t.Fatal(err)
	}
	for id, state := range map[string]instance.TaskState{"i-task": instance.TaskCreated, "i-done": instance.TaskCompleted} {
		data, _ := streams.Marshal(instance.Task{ID: id + ".t1", Instance: id, ProcessID: "review", Version: 2, Node: "approve",
			Variables: map[string]any{"doc": "d-7"}, CreatedAt: now, State: state})
		if _, err := tasks.Put(ctx, streams.TaskKey(id+".t1"), data); err != nil {
			t.Fatal(err)
		}
	}
	incidentsKV, err := env.JS.KeyValue(ctx, streams.IncidentsBucket)
	if err != nil {
		t.Fatal(err)
	}
	for id, state := range map[string]incidents.State{"i-incident": incidents.Open, "i-resolved": incidents.Resolved} {
		data, _ := streams.Marshal(incidents.Record{ID: "inc-" + id, Instance: id, ProcessID: "ship", Version: 1, Node: "label", State: state, LastFailure: now})
		if _, err := incidentsKV.Put(ctx, streams.IncidentKey("inc-"+id), data); err != nil {
			t.Fatal(err)
		}
	}

	messagesKV, err := env.JS.KeyValue(ctx, streams.MessagesBucket)
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := streams.Marshal(correlation.Entry{Name: "paid", Key: "o-1", Seq: 1, Subs: []instance.Subscription{
		{Name: "paid", Key: "o-1", Instance: "i-sub", ProcessID: "order", Wait: "w5", Opened: now},
		{Name: "paid", Key: "o-1", Instance: "i-here", ProcessID: "order", Wait: "w1", Opened: now},
	}})
	if _, err := messagesKV.Put(ctx, streams.MessageEntryKey("paid", "o-1"), entry); err != nil {
		t.Fatal(err)
	}

	// The signal index: an entry of a lost instance, one of a living
	// instance, and a purged one (its wait closed).
	signalsKV, err := env.JS.KeyValue(ctx, streams.SignalsBucket)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := streams.Marshal(map[string]any{"process": "alarm", "opened": now})
	for _, id := range []string{"i-signal", "i-here", "i-closed"} {
		if _, err := signalsKV.Put(ctx, streams.SignalKey("fire", id, id+"/wait-fire/3"), sig); err != nil {
			t.Fatal(err)
		}
	}
	if err := signalsKV.Purge(ctx, streams.SignalKey("fire", "i-closed", "i-closed/wait-fire/3")); err != nil {
		t.Fatal(err)
	}

	r, err := c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Read, storecheck.Counts{Checkpoints: 1, Jobs: 2, Timers: 1, Tasks: 2, Incidents: 1, Subscriptions: 2, Signals: 3}) {
		t.Errorf("read %+v", r.Read)
	}
	got := map[string]lost.Record{}
	for _, rec := range r.Lost {
		got[rec.Instance] = rec
	}
	if ids := slices.Sorted(maps.Keys(got)); !slices.Equal(ids, []string{"i-incident", "i-job", "i-signal", "i-sub", "i-task", "i-timer"}) {
		t.Fatalf("lost %v, want i-incident, i-job, i-signal, i-sub, i-task, i-timer", ids)
	}
	if g := got["i-signal"]; g.Process != "alarm" || g.Element != "wait-fire" || g.Traces[0].Source != "signal" {
		t.Errorf("signal's instance: %+v", g)
	}
	if s := got["i-sub"]; s.Process != "order" || s.Traces[0].Source != "subscription" || s.Traces[0].ID != "paid/o-1/w5" {
		t.Errorf("subscription's instance: %+v", s)
	}
	if j := got["i-job"]; j.Process != "order" || j.Element != "charge-card" || j.Vars["amount"] != float64(42) || j.Traces[0].ID != "i-job/charge-card/1" {
		t.Errorf("job's instance: %+v", j)
	}
	if k := got["i-task"]; k.Process != "review" || k.Version != 2 || k.Element != "approve" || k.Vars["doc"] != "d-7" {
		t.Errorf("task's instance: %+v", k)
	}
	if i := got["i-incident"]; i.Process != "ship" || i.Element != "label" || i.Traces[0].ID != "inc-i-incident" {
		t.Errorf("incident's instance: %+v", i)
	}
	if tm := got["i-timer"]; tm.Traces[0].Source != "timer" || tm.Traces[0].ID != "w3" || tm.Traces[0].At.IsZero() {
		t.Errorf("timer's instance: %+v", tm)
	}
	if r.Recorded != 6 || len(records(t, ctx, env)) != 6 {
		t.Fatalf("recorded %d", r.Recorded)
	}
	// Found again, recorded once.
	if r, err := c.Check(ctx); err != nil || len(r.Lost) != 6 || r.Recorded != 0 {
		t.Fatalf("second check: %+v, %v", r, err)
	}
}

// At run time: a worker reports on a job whose instance is not there.
// The job names the instance lost (a record, once) and is kept back while
// the record is open; once the operator closes it, it is let go.
func TestLostJobAtRunTime(t *testing.T) {
	ctx := bounded(t)
	env := streamstest.Start(t)
	c := checker(t, ctx, env, "")
	body, _ := json.Marshal(jobs.Job{ID: "i-rt/charge/1", Topic: "charge", Instance: "i-rt", ProcessID: "order", Node: "charge", Input: map[string]any{"amount": 7}})
	m := nats.NewMsg(streams.JobSubject("charge", "i-rt/charge/1"))
	m.Data = body
	m.Header.Set(outbox.HeaderJob, "i-rt/charge/1")
	ack, err := env.JS.PublishMsg(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second report finds the record there
		held, err := c.LostJob(ctx, "i-rt", ack.Sequence)
		if err != nil || !held {
			t.Fatalf("LostJob = %v, %v; want the job kept back", held, err)
		}
	}
	recs := records(t, ctx, env)
	if len(recs) != 1 || recs[0].Instance != "i-rt" || recs[0].Process != "order" || recs[0].Element != "charge" || recs[0].Vars["amount"] != float64(7) {
		t.Fatalf("records %+v", recs)
	}
	if err := c.Close(ctx, "instance.i-rt", lost.Dismissed, "refunded"); err != nil {
		t.Fatal(err)
	}
	if held, err := c.LostJob(ctx, "i-rt", ack.Sequence); err != nil || held {
		t.Errorf("after the dismissal: %v, %v; want the job let go", held, err)
	}
	if held, err := c.LostJob(ctx, "i-none", ack.Sequence+100); err != nil || held {
		t.Errorf("no such job message: %v, %v", held, err)
	}
	if len(records(t, ctx, env)) != 1 {
		t.Error("a record was written for a job that is not there")
	}
}
