package instance

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

func TestPublishThrow(t *testing.T) {
	b := model.NewBuilder("pub").StartEvent("start").
		MessageThrowEvent("notify", "order-paid", model.WithPublish(model.Publish{
			CorrelationKey: "order.id", MessageID: `"pay-" + order.ref`, TTL: time.Hour,
			Variables: []model.Mapping{{Target: "amount", Source: "order.amount"}, {Target: "when", Source: "'now'"}},
		})).ScriptTask("after", "'done'", "state").EndEvent("end").Sequence("start", "notify", "after", "end")
	s, _ := run(t, b, map[string]any{"order": map[string]any{"id": 17.0, "ref": "991", "amount": 20}})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"state": "done"})
	got := effects(s, PublishMessage)
	if len(got) != 1 {
		t.Fatalf("PublishMessage effects %+v, want one", got)
	}
	want := &OutMessage{Name: "order-paid", Key: "17", Vars: map[string]any{"amount": int64(20), "when": "now"}, TTL: time.Hour, ID: "pay-991"}
	if !reflect.DeepEqual(got[0].Message, want) {
		t.Errorf("message = %+v\nwant %+v", got[0].Message, want)
	}
	if !strings.HasPrefix(got[0].ID, "publish:i1/notify/") {
		t.Errorf("effect id %q, want publish:<the node's wait id>", got[0].ID)
	}
}

// A send task publishes over its input mappings; a message end event
// publishes and ends its token; a publish with neither key nor id nor
// variables sends the name alone.
func TestPublishSendTaskAndEndEvent(t *testing.T) {
	b := model.NewBuilder("send").StartEvent("start").ParallelGateway("fork").
		SendTask("send", "shipped", model.Input("ref", "'r-1'"), model.Output("sent", "true"),
			model.WithPublish(model.Publish{CorrelationKey: "ref", Variables: []model.Mapping{{Target: "ref", Source: "ref"}}})).
		MessageEndEvent("done", "done", model.WithPublish(model.Publish{})).
		TimerCatchEvent("wait", model.Duration("PT1M")).EndEvent("end").
		Sequence("start", "fork", "send", "done").Sequence("fork", "wait", "end")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	if !slices.Equal(s.ActiveNodes(), []string{"wait"}) {
		t.Fatalf("active %v: the message end event should have ended its token", s.ActiveNodes())
	}
	assertVars(t, s.Variables(), map[string]any{"sent": true})
	assertNoVar(t, s.Variables(), "ref")
	var got []OutMessage
	for _, e := range effects(s, PublishMessage) {
		got = append(got, *e.Message)
	}
	want := []OutMessage{{Name: "shipped", Key: "r-1", Vars: map[string]any{"ref": "r-1"}}, {Name: "done"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("published %+v\nwant %+v", got, want)
	}
	fire(t, s, env, "wait")
	assertStatus(t, s, Completed)
}

func TestPublishFaults(t *testing.T) {
	tests := map[string]struct {
		pub  model.Publish
		want string
	}{
		"key not a string or number": {model.Publish{CorrelationKey: "true"}, `publish correlation key "true": is bool true`},
		"id not a string":            {model.Publish{MessageID: "42"}, `message id "42" is int64 42, want a string`},
		"variable fails":             {model.Publish{Variables: []model.Mapping{{Target: "x", Source: "a + 1"}}}, `publish variable "x"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := run(t, model.NewBuilder("f").StartEvent("start").MessageThrowEvent("throw", "m", model.WithPublish(tt.pub)).
				EndEvent("end").Sequence("start", "throw", "end"), map[string]any{"a": "text"})
			inc := assertIncident(t, s, "throw", tt.want)
			if inc.CauseClass != incidents.CauseExpression || len(effects(s, PublishMessage)) != 0 {
				t.Errorf("cause %q, PublishMessage %+v", inc.CauseClass, effects(s, PublishMessage))
			}
		})
	}
}

// A message throw with work runs as a service task does: a worker's job
// or an in-process operation, boundaries included, then completes.
func TestThrowAsJob(t *testing.T) {
	x := newExec(map[string]opFunc{"notify": returns(map[string]any{"notified": true})})
	b := model.NewBuilder("jobs").StartEvent("start").
		SendTask("send", "shipped", model.WithWorker("mail"), model.Output("mailed", "ok")).
		MessageThrowEvent("throw", "paid", model.WithWorker("bus")).
		MessageEndEvent("end", "done", func(n *model.Node) { n.Service = &model.Service{Operation: "notify"} }).
		Sequence("start", "send", "throw", "end").
		TimerBoundary("slow", "send", model.Duration("PT1H"), true).EndEvent("slow_end").Flow("slow", "slow_end")
	env := newEnv(build(t, b), x)
	s := start(t, env, nil)
	job := waitAt(t, s, "send")
	if job.Kind != JobWait || job.Job.Topic != "mail" {
		t.Fatalf("send task wait %+v, want a job on mail", job)
	}
	waitAt(t, s, "slow")
	apply(t, s, env, jobDoneEvent(job, map[string]any{"ok": "yes"}))
	if got := effectWaits(s, CancelTimer); len(got) != 1 {
		t.Errorf("CancelTimer %v, want the send task's boundary", got)
	}
	apply(t, s, env, jobDoneEvent(waitAt(t, s, "throw"), map[string]any{"bus": 1}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"mailed": "yes", "bus": int64(1), "notified": true})
	if len(x.calls) != 1 || len(effects(s, PublishMessage)) != 0 {
		t.Errorf("operation calls %d, PublishMessage %+v", len(x.calls), effects(s, PublishMessage))
	}
}

func TestNoneThrowEventPassesOn(t *testing.T) {
	s, _ := run(t, model.NewBuilder("none").StartEvent("start").ThrowEvent("mark").ScriptTask("after", "1", "x").EndEvent("end").
		Sequence("start", "mark", "after", "end"), nil)
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"x": int64(1)})
}
