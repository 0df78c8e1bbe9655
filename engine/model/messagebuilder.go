package model

// MessageStartEvent adds a process-level start event that starts a new
// instance for each message called name (one per correlation key while
// that instance is active).
func (b *Builder) MessageStartEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, MessageEvent, append([]NodeOption{withMessage(name, "")}, opts...))
}

// MessageCatchEvent adds an intermediate event that waits for message name
// published with the correlation key that key (an expression) evaluates to
// when the token arrives. With key "" the event is reachable by the
// instance's business key and by instance id (Camunda 7 style).
func (b *Builder) MessageCatchEvent(id, name, key string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateCatchEvent, MessageEvent, append([]NodeOption{withMessage(name, key)}, opts...))
}

// ReceiveTask adds a task that waits for message name under the
// correlation key key evaluates to, like MessageCatchEvent; being an
// activity, it can have boundary events, mappings and a loop.
func (b *Builder) ReceiveTask(id, name, key string, opts ...NodeOption) *Builder {
	return b.node(id, ReceiveTask, NoneEvent, append([]NodeOption{withMessage(name, key)}, opts...))
}

// WaitTask adds a receive task without a message: Camunda 7's plain wait
// state. Its token waits until the engine is told to move it on
// (Engine.Trigger); like any activity it can have boundary events,
// mappings and a loop.
func (b *Builder) WaitTask(id string, opts ...NodeOption) *Builder {
	return b.node(id, ReceiveTask, NoneEvent, opts)
}

// MessageBoundary attaches a message boundary event to activity. An
// interrupting one cancels the activity when the message arrives; a
// non-interrupting one starts a parallel token each time one arrives.
func (b *Builder) MessageBoundary(id, activity, name, key string, interrupting bool, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, MessageEvent, append([]NodeOption{withMessage(name, key), func(n *Node) {
		n.AttachedTo, n.Interrupting = activity, interrupting
	}}, opts...))
}

// EventBasedGateway adds a gateway whose outgoing flows lead to message,
// signal and timer catch events or receive tasks with a message: the first of them to fire takes
// the token, and the others are closed.
func (b *Builder) EventBasedGateway(id string, opts ...NodeOption) *Builder {
	return b.node(id, EventBasedGateway, NoneEvent, opts)
}

// MessageThrowEvent adds an intermediate event that throws message name:
// with WithWorker a job does it, with WithPublish the engine publishes it.
func (b *Builder) MessageThrowEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateThrowEvent, MessageEvent, append([]NodeOption{withMessage(name, "")}, opts...))
}

// MessageEndEvent adds an end event that throws message name, as
// MessageThrowEvent does, and ends the token.
func (b *Builder) MessageEndEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, MessageEvent, append([]NodeOption{withMessage(name, "")}, opts...))
}

// SendTask adds a task that sends message name, as MessageThrowEvent does.
func (b *Builder) SendTask(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, SendTask, NoneEvent, append([]NodeOption{withMessage(name, "")}, opts...))
}

// ThrowEvent adds a none intermediate throw event: the token passes on.
func (b *Builder) ThrowEvent(id string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateThrowEvent, NoneEvent, opts)
}

// WithPublish makes a message throw publish its message itself: the
// engine publishes it with p's correlation key, variables, time to live
// and id, and the node completes at once.
func WithPublish(p Publish) NodeOption { return func(n *Node) { n.Publish = &p } }

// MessageNameExpr makes the message's name the value of expr, evaluated
// when the node is entered.
func MessageNameExpr(expr string) NodeOption {
	return func(n *Node) {
		if n.Message == nil {
			n.Message = &Message{}
		}
		n.Message.Name, n.Message.NameExpr = "", expr
	}
}

func withMessage(name, key string) NodeOption {
	return func(n *Node) { n.Message = &Message{Name: name, CorrelationKey: key} }
}
