package model

import (
	"time"

	"github.com/jetbpm/jetbpm/expression"
)

// Message names the message a node catches or throws.
//
// Name is the message name as written; NameExpr, when set, is an
// expression evaluated when the node is entered that gives the name
// instead (Zeebe allows a FEEL name). CorrelationKey is an expression
// evaluated when a catch opens its subscription; its value must be a
// string or a number. An empty CorrelationKey (Camunda 7 models carry no
// key) makes the catch reachable by the instance's business key, if it
// has one, and always by instance id. A message start event has no key.
type Message struct {
	Name           string `msgpack:"name,omitempty"`
	NameExpr       string `msgpack:"nameExpr,omitempty"`
	CorrelationKey string `msgpack:"key,omitempty"`

	name, key *expression.Expression
}

// NameCompiled returns the compiled name expression, nil for a literal name.
func (m *Message) NameCompiled() *expression.Expression { return m.name }

// KeyCompiled returns the compiled correlation key expression, nil when
// the message has no key.
func (m *Message) KeyCompiled() *expression.Expression { return m.key }

// Publish is a declarative message throw (the jetbpm:publish extension):
// the engine publishes the node's message itself, with the correlation
// key CorrelationKey evaluates to and the variables Variables map, and
// the node completes at once. TTL buffers the message for a subscription
// that opens later (0: not buffered); MessageID, an expression, refuses a
// second publish of the same id while the first is buffered.
type Publish struct {
	CorrelationKey string        `msgpack:"key,omitempty"`
	Variables      []Mapping     `msgpack:"vars,omitempty"`
	TTL            time.Duration `msgpack:"ttl,omitempty"`
	MessageID      string        `msgpack:"id,omitempty"`

	key, id *expression.Expression
}

// KeyCompiled returns the compiled correlation key expression, nil when none.
func (p *Publish) KeyCompiled() *expression.Expression { return p.key }

// IDCompiled returns the compiled message id expression, nil when none.
func (p *Publish) IDCompiled() *expression.Expression { return p.id }
