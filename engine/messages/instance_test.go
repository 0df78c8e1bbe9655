package messages

import (
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// An instance's message effects become commands on the subjects of their
// name and key, each with a fixed id, and the message partition reads them
// back as they were meant.
func TestMessageEffectsOnTheWire(t *testing.T) {
	t.Parallel()
	s := &instance.State{ID: "i-1", ProcessID: "order"}
	sub := &instance.Subscription{Name: "paid.x", Key: "o 1", Instance: "i-1", ProcessID: "order", Wait: "i-1/catch/3"}
	corr := &instance.Correlation{Name: "paid.x", Key: "o 1", Seq: 42, MessageID: "m"}
	for _, tc := range []struct {
		eff     instance.Effect
		subject string
		id      string
		check   func(*commandBody) bool
	}{
		{instance.Effect{ID: "e", Kind: instance.Subscribe, Sub: sub}, "jetbpm.m.sub.paid=2Ex.o=201", "sub:i-1/catch/3",
			func(c *commandBody) bool { return *c.Sub == *sub }},
		{instance.Effect{ID: "e", Kind: instance.Unsubscribe, Sub: sub}, "jetbpm.m.unsub.paid=2Ex.o=201", "unsub:i-1/catch/3",
			func(c *commandBody) bool { return *c.Sub == *sub }},
		// A rejection may name only the correlation and the wait.
		{instance.Effect{ID: "e", Kind: instance.RejectMessage, Correlation: corr, Wait: "i-1/catch/3"}, "jetbpm.m.rej.paid=2Ex.o=201", "rej:i-1/catch/3:42",
			func(c *commandBody) bool { return *c.Sub == *sub && *c.Correlation == *corr }},
		{instance.Effect{ID: "e", Kind: instance.StartEnded, Correlation: corr}, "jetbpm.m.end.paid=2Ex.o=201", "end:i-1",
			func(c *commandBody) bool { return c.Process == "order" && c.Instance == "i-1" }},
	} {
		m, err := EffectMsg(s, tc.eff)
		if err != nil {
			t.Fatalf("%s: %v", tc.eff.Kind, err)
		}
		if m.Subject != tc.subject || m.Header.Get("Nats-Msg-Id") != tc.id {
			t.Errorf("%s: %s %s, want %s %s", tc.eff.Kind, m.Subject, m.Header.Get("Nats-Msg-Id"), tc.subject, tc.id)
		}
		kind := streams.MessageKind(m.Subject[len("jetbpm.m.") : len(m.Subject)-len(".paid=2Ex.o=201")])
		c, err := decodeCommand(streams.StoredMessage{Kind: kind, Name: "paid.x", Key: "o 1"}, m.Data)
		if err != nil || !tc.check(c) {
			t.Errorf("%s: decoded %+v, %v", tc.eff.Kind, c, err)
		}
		// The same body on the subject of another name or key is refused.
		if kind != streams.MessageEnd {
			if _, err := decodeCommand(streams.StoredMessage{Kind: kind, Name: "paid.x", Key: "o 2"}, m.Data); err == nil {
				t.Errorf("%s: a command about another key was accepted", tc.eff.Kind)
			}
		}
	}

	pub, err := EffectMsg(s, instance.Effect{ID: "t/9", Kind: instance.PublishMessage,
		Message: &instance.OutMessage{Name: "paid", Key: "k", Vars: map[string]any{"a": 1.5}, TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Subject != "jetbpm.m.pub.paid.k" || pub.Header.Get("Nats-Msg-Id") != "t/9" || pub.Header.Get(streams.MessageTTLHeader) != "1m0s" {
		t.Errorf("publish: %s %v", pub.Subject, pub.Header)
	}
	in, err := decodeMessage(pub.Header, pub.Data, func(string, any) error { return nil })
	if err != nil || in.Vars["a"] != 1.5 || in.TTL != time.Minute || in.ID != "t/9" {
		t.Errorf("publish read back: %+v %v", in, err)
	}
	withID, _ := EffectMsg(s, instance.Effect{ID: "t/9", Kind: instance.PublishMessage, Message: &instance.OutMessage{Name: "paid", ID: "order-17"}})
	if withID.Header.Get("Nats-Msg-Id") != "order-17" || withID.Header.Get(streams.MessageTTLHeader) != "" || len(withID.Data) != 0 {
		t.Errorf("publish with an id: %v %q", withID.Header, withID.Data)
	}
}
