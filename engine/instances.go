package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/engine/partition"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// StartOption configures Start.
type StartOption func(*startOptions)

type startOptions struct {
	version     int
	id          string
	businessKey string
}

// Version starts a specific version instead of the latest.
func Version(v int) StartOption { return func(o *startOptions) { o.version = v } }

// InstanceID starts the instance under a caller-chosen id (letters, digits,
// '-' and '_'). Starting the same id again within two minutes is a no-op,
// so a caller can retry a start safely.
func InstanceID(id string) StartOption { return func(o *startOptions) { o.id = id } }

// BusinessKey stores k on the instance as its business key (Camunda 7): a
// message published for business key k (Message.BusinessKey) reaches the
// instance's message catches that have no correlation key of their own.
func BusinessKey(k string) StartOption { return func(o *startOptions) { o.businessKey = k } }

// Start creates an instance of a deployed process and returns its id. When
// Start returns, the instance exists and has taken its first step: the
// checkpoint is written and its effects (the first jobs, timers, facts)
// are stored, durably with Options.Sync; the instance runs on
// asynchronously (see Wait). No start event is stored: the partition loop
// of the node holding the instance's partition creates the instance
// (docs/engine.md §4.1) — this node's, or another's, to which the start is
// routed. Where no node takes it so (Options.QueuedStarts is set, the
// holder is unknown, or it does not answer), the start is stored when
// Start returns, and the holder takes the first step. An error may leave
// the instance created or not: retry with the same id (InstanceID), which
// is a no-op for an instance that exists. Start returns the id it chose
// with such an error.
func (e *Engine) Start(ctx context.Context, processID string, vars map[string]any, opts ...StartOption) (string, error) {
	var o startOptions
	for _, fn := range opts {
		fn(&o)
	}
	if o.id == "" {
		o.id = nuid.Next()
	} else if !checkpoint.ValidID(o.id) {
		return "", fmt.Errorf("%w: instance id %q: use 1-128 letters, digits, '-' or '_'", ErrInvalid, o.id)
	}
	if err := messages.CheckString("business key", o.businessKey); err != nil {
		return "", err
	}
	def, err := e.defs.Get(ctx, processID, o.version)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(def.Nodes, func(n *model.Node) bool {
		return n.Kind == model.StartEvent && n.Event == model.NoneEvent && n.Scope == ""
	}) {
		if names := deploy.MessageStartNames(def); len(names) > 0 {
			return "", fmt.Errorf("%w: process %s v%d has no none start event; it starts only by message (%s)",
				ErrInvalid, def.ID, def.Version, strings.Join(names, ", "))
		}
		return "", fmt.Errorf("%w: process %s v%d has no none start event", ErrInvalid, def.ID, def.Version)
	}
	clean, err := e.checkVars(vars)
	if err != nil {
		return "", err
	}
	req := &checkpoint.StartRequest{ProcessID: def.ID, Version: def.Version, Vars: clean, BusinessKey: o.businessKey}
	env := checkpoint.Envelope{Instance: o.id, Start: req}
	// Where another node holds the partition, that node creates the
	// instance (route.go): a create here would make it republish the
	// outbox when it first loads the instance.
	p := e.partitionOf(o.id)
	part := e.held(p)
	if part == nil && !e.opts.QueuedStarts {
		if routed, err := e.routeStart(ctx, p, env); routed {
			return o.id, err
		}
	}
	if e.opts.QueuedStarts || part == nil {
		if err := e.send(ctx, env, "start:"+o.id); err != nil {
			return "", err
		}
		return o.id, nil
	}
	if err := e.startDirect(ctx, part, env); err != nil {
		return o.id, err
	}
	return o.id, nil
}

// startDirect has this node's partition loop create the instance of env
// (docs/engine.md §4.1), after the checks send makes of a stored start.
func (e *Engine) startDirect(ctx context.Context, part *partition.Partition, env checkpoint.Envelope) error {
	if _, err := e.startBody(env); err != nil {
		return err
	}
	if err := part.Start(ctx, env.Instance, env.Start); err != nil {
		if errors.Is(err, partition.ErrStopped) {
			if e.isClosed() {
				return fmt.Errorf("instance %s: start: %w", env.Instance, ErrClosed)
			}
			// This node let the partition go meanwhile: the start was
			// not taken, and is stored for the node that steps it now.
			return e.send(ctx, env, "start:"+env.Instance)
		}
		return fmt.Errorf("instance %s: start: %w", env.Instance, err)
	}
	return nil
}

// Cancel terminates an active instance and waits until it has. An
// instance whose start is accepted but not yet applied is cancelled too:
// the cancel queues behind the start.
func (e *Engine) Cancel(ctx context.Context, id, reason string) error {
	s, _, err := e.current(ctx, id)
	if err != nil {
		return err
	}
	if s != nil && s.Status.Finished() {
		return fmt.Errorf("instance %s is %s: %w", id, s.Status, ErrFinished)
	}
	ev := &instance.Event{ID: "cancel:" + id, Kind: instance.Cancel, Reason: reason}
	if err := e.send(ctx, checkpoint.Envelope{Instance: id, Event: ev}, ev.ID); err != nil {
		return err
	}
	_, err = e.Wait(ctx, id)
	return err
}

// send publishes an envelope to the instance's partition and waits until it
// is stored.
func (e *Engine) send(ctx context.Context, env checkpoint.Envelope, msgID string) error {
	m, err := checkpoint.EventMsg(env, msgID, e.layout.Partitions)
	if err != nil {
		return err
	}
	if len(m.Data) > e.opts.MaxCheckpointBytes {
		return fmt.Errorf("%w: request is %d bytes, the limit is %d", ErrTooLarge, len(m.Data), e.opts.MaxCheckpointBytes)
	}
	if err := e.writable(); err != nil {
		return fmt.Errorf("instance %s: %w", env.Instance, err)
	}
	if _, err := e.js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("instance %s: publish: %w", env.Instance, err)
	}
	if err := e.durable.Sync(ctx); err != nil {
		return fmt.Errorf("instance %s: %w", env.Instance, err)
	}
	return nil
}

// Instance returns the current view of an instance. An instance whose
// start is accepted but not yet applied shows as active with no tokens.
func (e *Engine) Instance(ctx context.Context, id string) (*InstanceView, error) {
	s, pending, err := e.current(ctx, id)
	if err != nil {
		return nil, err
	}
	if pending != nil {
		return pending, nil
	}
	return viewOf(s), nil
}

// current reads id's checkpoint. With no checkpoint but a start still
// queued, it answers the pending start's view instead (s nil). A start may
// be applied between the two reads — its checkpoint is written before its
// event leaves the queue — so a checkpoint missing while no start is
// queued is read once more before the instance counts as unknown.
func (e *Engine) current(ctx context.Context, id string) (s *instance.State, pending *InstanceView, err error) {
	s, _, err = e.store.Get(ctx, id)
	if !errors.Is(err, ErrNotFound) {
		return s, nil, err
	}
	if v, ok := e.pendingStart(ctx, id); ok {
		return nil, v, nil
	}
	s, _, err = e.store.Get(ctx, id)
	return s, nil, err
}

// pendingStart looks for a start of id still queued on its partition.
func (e *Engine) pendingStart(ctx context.Context, id string) (*InstanceView, bool) {
	if !checkpoint.ValidID(id) {
		return nil, false
	}
	m, err := e.events.GetLastMsgForSubject(ctx, streams.EventSubject(e.partitionOf(id), id))
	if err != nil {
		return nil, false
	}
	var env checkpoint.Envelope
	if streams.Unmarshal(m.Data, &env) != nil || env.Start == nil {
		// Only a start can be the last message of an instance that has no
		// checkpoint yet; anything else means it was never started.
		return nil, false
	}
	v := viewOf(&instance.State{ID: id, ProcessID: env.Start.ProcessID, Version: env.Start.Version,
		Status: instance.Active, StartedAt: m.Time, Scopes: []*instance.Scope{{ID: instance.RootScope, Vars: env.Start.Vars}}})
	return v, true
}

// Wait blocks until the instance has finished, or ctx ends.
func (e *Engine) Wait(ctx context.Context, id string) (*InstanceView, error) {
	return e.WaitUntil(ctx, id, func(v *InstanceView) bool { return v.Status.Finished() })
}

// WaitUntil blocks until the instance's checkpoint satisfies cond, or ctx
// ends. It watches the checkpoint, so it sees every committed step.
func (e *Engine) WaitUntil(ctx context.Context, id string, cond func(*InstanceView) bool) (*InstanceView, error) {
	if !checkpoint.ValidID(id) {
		return nil, fmt.Errorf("instance %q: %w", id, ErrNotFound)
	}
	w, err := e.store.KV().Watch(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("instance %s: watch: %w", id, err)
	}
	defer w.Stop()
	var last *InstanceView
	err = awaitPut(ctx, w, "instance "+id, func(s *instance.State) (bool, error) {
		last = viewOf(s)
		return cond(last), nil
	})
	return last, err
}

// Filter selects instances for Instances.
type Filter struct {
	ProcessID string
	// Status "active" includes the instances shown as StatusIncident
	// (they are alive); "" means any.
	Status instance.Status
	Limit  int
}

func (f Filter) matchStatus(s instance.Status) bool {
	switch f.Status {
	case "":
		return true
	case instance.Active:
		return s == instance.Active || s == StatusIncident
	}
	return s == f.Status
}

// bulkRead is the number of checkpoints from which a list reads them with
// one watch of the bucket rather than a request per checkpoint (a list
// without a limit always does).
const bulkRead = 500

// Instances lists instances matching f, newest first (then by id). This
// node's instance index picks them, after it has caught up with every
// checkpoint written before the call; only the checkpoints of the
// instances returned are read. An instance whose checkpoint no longer
// matches f when read (it moved on meanwhile) is left out, so a list may
// hold fewer than f.Limit.
func (e *Engine) Instances(ctx context.Context, f Filter) ([]*InstanceView, error) {
	if err := e.instIndex.Sync(ctx); err != nil {
		return nil, err
	}
	ids := e.instIndex.Pick(f.ProcessID, f.matchStatus, f.Limit)
	read := e.store.GetEach
	if f.Limit <= 0 || len(ids) > bulkRead {
		read = e.store.GetAll
	}
	states, err := read(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*InstanceView, 0, len(ids))
	for _, s := range states {
		if s == nil {
			continue // expired since the index heard of it
		}
		v := viewOf(s)
		if f.ProcessID != "" && v.ProcessID != f.ProcessID || !f.matchStatus(v.Status) {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// StatusIncident is the status shown for an active instance that needs an
// operator: it has open incidents, or a parallel join of it can never fire
// (InstanceView.Stuck). It is alive, so listing "active" includes it.
const StatusIncident = checkpoint.StatusIncident

// InstanceView is what the API and the CLI show of an instance.
type InstanceView struct {
	ID          string          `json:"id"`
	ProcessID   string          `json:"processId"`
	Version     int             `json:"version"`
	BusinessKey string          `json:"businessKey,omitempty"`
	Status      instance.Status `json:"status"`
	Variables   map[string]any  `json:"variables"`
	ActiveNodes []string        `json:"activeNodes"`
	// Passed is the completed path, sorted: the nodes its tokens have left
	// along a sequence flow, the end events they reached and the flows
	// they took (not an interrupted activity, nor one still active).
	Passed    []string          `json:"passed,omitempty"`
	Incidents []IncidentSummary `json:"incidents"`
	// Stuck are the parallel joins that can never fire: every token left
	// in their scope waits at a join (docs/incidents.md §7).
	Stuck []instance.StuckJoin `json:"stuck,omitempty"`
	// Compensable are the completions its journal holds, newest first:
	// what a compensation throw or Compensate can still undo.
	Compensable []Compensable `json:"compensable,omitempty"`
	// CalledInstances are the child instances its call activities wait for.
	CalledInstances []string `json:"calledInstances,omitempty"`
	// ParentInstance is the instance whose call activity started this one.
	ParentInstance string            `json:"parentInstance,omitempty"`
	StartedAt      time.Time         `json:"startedAt"`
	EndedAt        *time.Time        `json:"endedAt,omitempty"`
	Failure        *instance.Failure `json:"failure,omitempty"`
}

// Compensable is one completion of an instance's journal
// (docs/compensation.md): the activity, its handler, and for a
// multi-instance activity the iteration.
type Compensable struct {
	Node      string `json:"nodeId"`
	Handler   string `json:"handler"`
	Iteration int    `json:"iteration,omitempty"`
}

// IncidentSummary names an open incident of an instance.
type IncidentSummary struct {
	ID         string `json:"id"`
	Node       string `json:"nodeId"`
	CauseClass string `json:"causeClass"`
	Cause      string `json:"cause"`
	Attempts   int    `json:"attempts"`
}

func viewOf(s *instance.State) *InstanceView {
	v := &InstanceView{
		ID: s.ID, ProcessID: s.ProcessID, Version: s.Version, BusinessKey: s.BusinessKey, Status: s.Status,
		Variables: s.Variables(), ActiveNodes: s.ActiveNodes(), CalledInstances: s.CalledInstances(),
		StartedAt: s.StartedAt, Failure: s.Failure, Stuck: s.Stuck, Passed: s.Passed,
		Incidents: []IncidentSummary{},
	}
	if s.Parent != nil {
		v.ParentInstance = s.Parent.Instance
	}
	for _, inc := range s.OpenIncidents() {
		v.Incidents = append(v.Incidents, IncidentSummary{ID: inc.ID, Node: inc.Node, CauseClass: inc.CauseClass, Cause: inc.Cause(), Attempts: inc.Attempts})
	}
	for i := len(s.Journal) - 1; i >= 0; i-- {
		c := s.Journal[i]
		v.Compensable = append(v.Compensable, Compensable{Node: c.Node, Handler: c.Handler, Iteration: c.Iteration})
	}
	v.Status = checkpoint.Status(s)
	if v.Variables == nil {
		v.Variables = map[string]any{}
	}
	if v.ActiveNodes == nil {
		v.ActiveNodes = []string{}
	}
	if !s.EndedAt.IsZero() {
		t := s.EndedAt
		v.EndedAt = &t
	}
	return v
}

// JobView is what a front end for external-task workers (the Camunda 7
// REST facade, engine/camunda7) reads about one waiting job besides its
// message: the instance's business key and version, and the job's
// bookkeeping (its attempts budget and the delivery the engine last saw).
type JobView struct {
	Instance    string     `json:"instanceId"`
	ProcessID   string     `json:"processId"`
	Version     int        `json:"version"`
	BusinessKey string     `json:"businessKey,omitempty"`
	Job         jobs.State `json:"job"`
}

// Job reads the job id of instance instanceID. It returns ErrNotFound when
// the instance does not exist, has finished, or no longer waits for the job
// (its task completed or was interrupted).
func (e *Engine) Job(ctx context.Context, instanceID, jobID string) (*JobView, error) {
	s, _, err := e.store.Get(ctx, instanceID)
	if err != nil {
		return nil, err
	}
	st := s.Job(jobID)
	if s.Status.Finished() || st == nil {
		return nil, fmt.Errorf("%w: job %s of instance %s", ErrNotFound, jobID, instanceID)
	}
	return &JobView{Instance: s.ID, ProcessID: s.ProcessID, Version: s.Version, BusinessKey: s.BusinessKey, Job: *st}, nil
}
