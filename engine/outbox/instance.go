package outbox

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// HandleTimers registers the handlers of timer effects: a schedule is a
// message schedule on the instance's timer subject aimed at its events
// subject; a cancel purges that subject of events.
func HandleTimers(pub *Publisher, events jetstream.Stream) {
	pub.Handle(func(_ context.Context, out *Outbox, eff instance.Effect) error {
		s := out.state
		body, err := streams.Marshal(checkpoint.Envelope{Instance: s.ID, Event: &instance.Event{
			ID: eff.ID, Kind: instance.TimerFired, Wait: eff.Wait, Firing: eff.Firing,
		}})
		if err != nil {
			return err
		}
		m := nats.NewMsg(streams.TimerSubject(out.partition, s.ID, eff.Wait))
		m.Data = body
		m.Header.Set("Nats-Schedule", "@at "+eff.Due.UTC().Format(time.RFC3339Nano))
		m.Header.Set("Nats-Schedule-Target", streams.EventSubject(out.partition, s.ID))
		m.Header.Set(jetstream.MsgIDHeader, eff.ID)
		return out.Send(m, nil)
	}, instance.ScheduleTimer)
	pub.Handle(func(ctx context.Context, out *Outbox, eff instance.Effect) error {
		subj := streams.TimerSubject(out.partition, out.state.ID, eff.Wait)
		return events.Purge(ctx, jetstream.WithPurgeSubject(subj))
	}, instance.CancelTimer)
}

// HandleCalls registers the handlers of call activities' effects: a child
// starts, a child reports to its parent, a parent cancels its child. Each
// is an event on the other instance's partition (of partitions).
func HandleCalls(pub *Publisher, partitions int) {
	pub.Handle(SendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		c := eff.Start
		return checkpoint.EventMsg(checkpoint.Envelope{Instance: c.ID, Start: &checkpoint.StartRequest{
			ProcessID: c.ProcessID, Version: c.Version, Vars: c.Vars, Parent: &c.Parent,
		}}, "start:"+c.ID, partitions)
	}), instance.StartChildEffect)
	pub.Handle(SendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		// A child reports its end once, and an escalation as often as it
		// throws one: each report has an id of its own, or the end would be
		// taken for a duplicate of an escalation sent just before it.
		id := "child:" + eff.Result.Child + ":done"
		if eff.Result.Escalation != nil {
			id = eff.ID
		}
		return checkpoint.EventMsg(checkpoint.Envelope{Instance: eff.Parent.Instance, Event: &instance.Event{
			ID: id, Kind: instance.ChildDone, Wait: eff.Parent.Wait, Child: eff.Result,
		}}, id, partitions)
	}), instance.NotifyParent)
	pub.Handle(SendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		return checkpoint.EventMsg(checkpoint.Envelope{Instance: eff.Child, Event: &instance.Event{
			ID: "cancel:" + eff.Child, Kind: instance.Cancel, Reason: "its call activity was cancelled",
		}}, "cancel:"+eff.Child, partitions)
	}), instance.CancelChild)
}

// ChildStartFailed tells the call activity that asked for start request
// req that its child id could not start (cause: the called process is not
// deployed, say): to the caller, the child failed. A request no call
// activity made is not its business.
func ChildStartFailed(ctx context.Context, js jetstream.JetStream, partitions int, id string, req *checkpoint.StartRequest, cause error) error {
	if req.Parent == nil {
		return nil
	}
	res := &instance.ChildResult{Child: id, Status: instance.Failed, Failure: &instance.Failure{Message: "could not start: " + cause.Error()}}
	m, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: req.Parent.Instance, Event: &instance.Event{
		ID: "child:" + id + ":done", Kind: instance.ChildDone, Wait: req.Parent.Wait, Child: res,
	}}, "child:"+id+":done", partitions)
	if err != nil {
		return err
	}
	_, err = js.PublishMsg(ctx, m)
	return err
}

// HandleFacts registers the handler of instance lifecycle facts.
func HandleFacts(pub *Publisher) {
	pub.Handle(SendMsg(func(s *instance.State, eff instance.Effect) (*nats.Msg, error) {
		body, err := instance.AppendFact(make([]byte, 0, 256), eff.Fact)
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.FactSubject(streams.FactInstance, s.ProcessID, string(eff.Fact.Kind)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, eff.Fact.ID)
		return m, nil
	}), instance.PublishFact)
}
