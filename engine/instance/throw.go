package instance

import (
	"fmt"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// throwMessage runs a message throw: an intermediate throw or end event
// with a message definition, or a send task. One with work (Node.Service:
// a worker topic or an in-process operation) runs exactly as a service
// task does, boundaries included. One with a declarative publish
// (Node.Publish) publishes its message (PublishMessage) and completes at
// once; an end event then ends its token as a none end event does.
func (r *runner) throwMessage(t *Track, n *model.Node) {
	if n.Service != nil {
		r.service(t, n)
		return
	}
	if n.Publish == nil {
		r.bug("message throw %q neither runs a job nor publishes", n.ID)
	}
	locals := t.Locals // its inputs, evaluated as it was entered
	msg, err := r.outMessage(n, r.visibleWith(t, locals))
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "publish:" + r.waitID(n.ID, t.Activation), Kind: PublishMessage, Message: msg})
	r.complete(t, n, locals, nil) // an end event has no outgoing flow: its token ends
}

// outMessage evaluates a declarative publish over vars: the message name,
// its correlation key (a string or a number, as for a catch; none gives
// ""), its id (a string) and its variables (the publish's mappings; none
// gives no variables).
func (r *runner) outMessage(n *model.Node, vars map[string]any) (*OutMessage, error) {
	p := n.Publish
	name, err := r.messageName(n.Message, vars)
	if err != nil {
		return nil, err
	}
	msg := &OutMessage{Name: name, TTL: p.TTL}
	if e := p.KeyCompiled(); e != nil {
		v, err := e.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("message %q: publish correlation key: %w", name, err)
		}
		if msg.Key, err = correlationKey(v); err != nil {
			return nil, fmt.Errorf("message %q: publish correlation key %q: %w", name, p.CorrelationKey, err)
		}
	}
	if e := p.IDCompiled(); e != nil {
		v, err := e.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("message %q: message id: %w", name, err)
		}
		id, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("message %q: message id %q is %s, want a string", name, p.MessageID, describe(v))
		}
		msg.ID = id
	}
	for i := range p.Variables {
		m := &p.Variables[i]
		if m.Program() != nil {
			return nil, fmt.Errorf("message %q: publish variable %q: JavaScript is not supported here", name, m.Target)
		}
		v, err := m.Compiled().Eval(vars)
		if err == nil {
			v, err = Normalize(v)
		}
		if err != nil {
			return nil, fmt.Errorf("message %q: publish variable %q: %w", name, m.Target, err)
		}
		if msg.Vars == nil {
			msg.Vars = map[string]any{}
		}
		msg.Vars[m.Target] = v
	}
	return msg, nil
}
