package camunda8

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lease"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams"
)

// Service is what both Camunda 8 doors serve — the Zeebe gRPC gateway and
// the Orchestration Cluster REST API — in Camunda 8's terms: objects named
// by keys, requests refused in Zeebe's words. Each door decodes its
// requests, calls the Service and maps its errors onto its own terms
// (docs/camunda8-migration.md).
//
// Errors are engine errors, or a *Rejection whose Kind is one of
// engine.ErrNotFound, ErrInvalid, ErrFinished, ErrDuplicate, ErrTooLarge,
// errors.ErrUnsupported or context.DeadlineExceeded; match them with
// errors.Is. Job errors are Jobs'.
type Service struct {
	eng    *engine.Engine
	ids    *IDs
	lender *lease.Lender
	jobs   *Jobs
}

// Options configures a Service; the zero value works.
type Options struct {
	Logger *slog.Logger
	// VerdictTimeout bounds the wait for the engine's answer to a job
	// report (lease.Options).
	VerdictTimeout time.Duration
	// Now is the clock of job deadlines (default time.Now).
	Now func() time.Time
}

// NewService returns the Service of an engine node; js reaches the keys
// bucket (streams.C8KeysBucket, provisioned with the engine's streams).
// Close it when its door stops.
func NewService(eng *engine.Engine, js jetstream.JetStream, opts Options) (*Service, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, streams.C8KeysBucket)
	if err != nil {
		return nil, fmt.Errorf("camunda 8: keys bucket %s: %w", streams.C8KeysBucket, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l, err := lease.New(eng, js.Conn(), lease.Options{Logger: opts.Logger, VerdictTimeout: opts.VerdictTimeout, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("camunda 8: %w", err)
	}
	ids := NewIDs(kv, eng.Partitions(), eng.PartitionOf, SyncKeys(eng.Sync))
	return &Service{eng: eng, ids: ids, lender: l, jobs: NewJobs(eng, ids, l, opts.Now, opts.Logger)}, nil
}

// Close stops extending the locks of activated jobs (they expire, and the
// jobs return to the queue, unless reported first) and stops receiving
// verdicts. Call it after the door stopped.
func (s *Service) Close() {
	s.jobs.Close()
	s.lender.Close()
}

// Engine returns the engine served.
func (s *Service) Engine() *engine.Engine { return s.eng }

// IDs returns the key mapping.
func (s *Service) IDs() *IDs { return s.ids }

// Jobs returns the job handling.
func (s *Service) Jobs() *Jobs { return s.jobs }

// A Rejection is a request refused in Zeebe's words; Kind is the error it
// stands for, so that errors.Is(r, engine.ErrNotFound) holds for one
// whose Kind is engine.ErrNotFound.
type Rejection struct {
	Kind error
	Msg  string
}

func (r *Rejection) Error() string { return r.Msg }
func (r *Rejection) Unwrap() error { return r.Kind }

// Reject returns a *Rejection of kind with a formatted message.
func Reject(kind error, format string, args ...any) error {
	return &Rejection{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// A Deployment is what DeployResources deployed: its key and, per process
// version, the version's key.
type Deployment struct {
	Key       Key
	Processes []DeployedProcess
}

// A DeployedProcess is one process version of a deployment.
type DeployedProcess struct {
	ProcessID string
	Version   int
	Key       Key
	Resource  string
}

// Deploy deploys BPMN resources, all or none; a resource not named .bpmn
// or .xml (a decision, a form) is refused. A file identical to the latest
// version keeps that version, as Zeebe's duplicate check does.
func (s *Service) Deploy(ctx context.Context, files []engine.Resource) (Deployment, error) {
	if len(files) == 0 {
		return Deployment{}, Reject(engine.ErrInvalid, "expected to deploy at least one resource, but none given")
	}
	for _, f := range files {
		if !strings.HasSuffix(f.Name, ".bpmn") && !strings.HasSuffix(f.Name, ".xml") {
			return Deployment{}, Reject(engine.ErrInvalid, "resource %q: jetbpm deploys BPMN files (.bpmn, .xml); decisions (DMN) and forms are not supported yet", f.Name)
		}
	}
	deps, err := s.eng.DeployResources(ctx, files...)
	if err != nil {
		return Deployment{}, err
	}
	key, err := s.ids.NewKey(ctx, 1)
	if err != nil {
		return Deployment{}, err
	}
	out := Deployment{Key: key}
	for _, d := range deps {
		dk, err := s.ids.DefinitionKey(ctx, d.ProcessID, d.Version)
		if err != nil {
			return Deployment{}, err
		}
		out.Processes = append(out.Processes, DeployedProcess{ProcessID: d.ProcessID, Version: d.Version, Key: dk, Resource: d.Resource})
	}
	return out, nil
}

// A Start names the process version to start — by DefinitionKey, or by
// ProcessID and Version (0 or negative: the latest) — and its variables.
type Start struct {
	DefinitionKey int64
	ProcessID     string
	Version       int
	Variables     map[string]any
	BusinessID    string // the instance's business key
}

// A Started instance.
type Started struct {
	DefinitionKey Key
	ProcessID     string
	Version       int
	InstanceKey   Key
	InstanceID    string // the key's text
}

// Start creates an instance with a new key, its id the key's text.
func (s *Service) Start(ctx context.Context, st Start) (Started, error) {
	out, err := s.definition(ctx, st)
	if err != nil {
		return Started{}, err
	}
	key, id, err := s.ids.NewInstance(ctx)
	if err != nil {
		return Started{}, err
	}
	if _, err := s.eng.Start(ctx, out.ProcessID, st.Variables, engine.Version(out.Version), engine.InstanceID(id),
		engine.BusinessKey(st.BusinessID)); err != nil {
		return Started{}, err
	}
	out.InstanceKey, out.InstanceID = key, id
	return out, nil
}

// definition resolves the version st names.
func (s *Service) definition(ctx context.Context, st Start) (Started, error) {
	if st.DefinitionKey != 0 {
		id, v, err := s.Definition(ctx, st.DefinitionKey)
		if err != nil {
			return Started{}, err
		}
		return Started{DefinitionKey: Key(st.DefinitionKey), ProcessID: id, Version: v}, nil
	}
	if st.ProcessID == "" {
		return Started{}, Reject(engine.ErrInvalid, "expected either a processDefinitionKey or a bpmnProcessId, but none given")
	}
	p, err := s.eng.Process(ctx, st.ProcessID, max(st.Version, 0)) // cached: no listing on the start path
	if err != nil {
		return Started{}, err
	}
	key, err := s.ids.DefinitionKey(ctx, p.ID, p.Version)
	if err != nil {
		return Started{}, err
	}
	return Started{DefinitionKey: key, ProcessID: p.ID, Version: p.Version}, nil
}

// Await waits until a started instance completes, for at most timeout (0:
// until ctx ends), and returns its variables — those named in fetch, or
// all (never nil). The instance runs on when the wait ends first
// (context.DeadlineExceeded); one that ends other than completed is
// refused as engine.ErrFinished.
func (s *Service) Await(ctx context.Context, st Started, timeout time.Duration, fetch []string) (map[string]any, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	v, err := s.eng.Wait(ctx, st.InstanceID)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, Reject(context.DeadlineExceeded, "process instance %d did not complete within the request timeout; it runs on", st.InstanceKey)
	case err != nil:
		return nil, err
	case v.Status != instance.Completed:
		return nil, Reject(engine.ErrFinished, "process instance %d ended %s, not completed", st.InstanceKey, v.Status)
	}
	if len(fetch) == 0 && v.Variables != nil {
		return v.Variables, nil
	}
	out := map[string]any{}
	for _, n := range fetch {
		if x, ok := v.Variables[n]; ok {
			out[n] = x
		}
	}
	return out, nil
}

// Definition returns the process version a definition key names.
func (s *Service) Definition(ctx context.Context, key int64) (processID string, version int, err error) {
	err = s.lookup(key, "process definition", func(k Key) (err error) {
		processID, version, err = s.ids.Definition(ctx, k)
		return err
	})
	return processID, version, err
}

// Incident returns the id of the incident a key names. It does not check
// that the incident exists: the engine answers that.
func (s *Service) Incident(ctx context.Context, key int64) (id string, err error) {
	err = s.lookup(key, "incident", func(k Key) (err error) { id, err = s.ids.Incident(ctx, k); return err })
	return id, err
}

// Task returns the id of the user task a key names, as Incident does.
func (s *Service) Task(ctx context.Context, key int64) (id string, err error) {
	err = s.lookup(key, "user task", func(k Key) (err error) { id, err = s.ids.Task(ctx, k); return err })
	return id, err
}

// lookup checks key and finds what it names with find; a key that names
// no what is refused as engine.ErrNotFound, in Zeebe's words.
func (s *Service) lookup(key int64, what string, find func(Key) error) error {
	k, err := ParseKey(key, s.eng.Partitions())
	if err == nil {
		err = find(k)
	}
	if errors.Is(err, ErrBadKey) {
		return Reject(engine.ErrNotFound, "expected to find %s with key '%d', but none found", what, key)
	}
	return err
}

// Instance returns the id of the instance a key names.
func (s *Service) Instance(ctx context.Context, key int64) (string, error) {
	k, err := ParseKey(key, s.eng.Partitions())
	var id string
	if err == nil {
		id, err = s.ids.Instance(ctx, k)
	}
	if err != nil {
		return "", Reject(engine.ErrNotFound, "expected to find a process instance with key '%d', but none found", key)
	}
	return id, nil
}

// Cancel terminates an active instance.
func (s *Service) Cancel(ctx context.Context, key int64) error {
	id, err := s.Instance(ctx, key)
	if err != nil {
		return err
	}
	if err := s.eng.Cancel(ctx, id, "cancelled by a Camunda 8 client"); err != nil {
		if errors.Is(err, engine.ErrFinished) || errors.Is(err, engine.ErrNotFound) {
			return Reject(engine.ErrNotFound, "expected to cancel a process instance with key '%d', but no active instance has it", key)
		}
		return err
	}
	return nil
}

// SetVariables writes variables to an instance's process-level scope and
// returns the operation's new key. jetbpm's element instances have no
// keys yet: the key must be the instance's.
func (s *Service) SetVariables(ctx context.Context, key int64, vars map[string]any) (Key, error) {
	id, err := s.Instance(ctx, key)
	if err != nil {
		return 0, err
	}
	if _, err := s.eng.SetVariables(ctx, id, vars); err != nil {
		if errors.Is(err, engine.ErrFinished) {
			return 0, Reject(engine.ErrNotFound, "expected to update variables of process instance '%d', but it is not active", key)
		}
		return 0, err
	}
	return s.ids.NewKey(ctx, Key(key).Partition())
}

// Publish publishes a message, buffered for its TTL, and returns the
// publication's new key. A message id published before is refused as
// engine.ErrDuplicate.
func (s *Service) Publish(ctx context.Context, m engine.Message) (Key, error) {
	if m.TTL < 0 {
		return 0, Reject(engine.ErrInvalid, "timeToLive %d is negative", m.TTL.Milliseconds())
	}
	if _, err := s.eng.PublishMessage(ctx, m); err != nil {
		if errors.Is(err, engine.ErrDuplicate) {
			return 0, Reject(engine.ErrDuplicate, "expected to publish a new message with id '%s', but a message with that id was already published", m.ID)
		}
		return 0, err
	}
	return s.ids.NewKey(ctx, 1)
}

// Correlate delivers a message to the subscription waiting for it, or
// starts the instance a message start event names, and returns the
// correlation's new key and the key of the instance that took it.
// Nothing is buffered: with no taker it is refused as engine.ErrNotFound.
func (s *Service) Correlate(ctx context.Context, m engine.Message) (msg, inst Key, err error) {
	id, err := s.eng.CorrelateMessage(ctx, m)
	if errors.Is(err, engine.ErrNoSubscription) {
		return 0, 0, Reject(engine.ErrNotFound, "expected to find subscription for message with name '%s' and correlation key '%s', but none was found", m.Name, m.Key)
	}
	if err != nil {
		return 0, 0, err
	}
	if inst, err = s.ids.InstanceKey(ctx, id); err != nil {
		return 0, 0, err
	}
	msg, err = s.ids.NewKey(ctx, inst.Partition())
	return msg, inst, err
}

// Broadcast broadcasts a signal and returns the broadcast's new key.
func (s *Service) Broadcast(ctx context.Context, sig engine.Signal) (Key, error) {
	if _, err := s.eng.BroadcastSignal(ctx, sig); err != nil {
		return 0, err
	}
	return s.ids.NewKey(ctx, 1)
}

// ResolveIncident retries the incident's node: a job is queued again with
// its task's retries, an expression evaluated again. jetbpm keeps the
// incident open while that retry runs (it closes when the node completes,
// and is raised again when it fails); to a Camunda 8 client it is
// resolved: resolving it again, or a key that names no incident, is
// refused as engine.ErrNotFound.
func (s *Service) ResolveIncident(ctx context.Context, key int64) error {
	id, err := s.Incident(ctx, key)
	if errors.Is(err, engine.ErrNotFound) {
		return Reject(engine.ErrNotFound, "expected to resolve incident with key '%d', but no such incident was found", key)
	}
	if err != nil {
		return err
	}
	// An incident just raised may have no record yet (it is written after
	// its instance's checkpoint): RetryIncident finds it there.
	v, err := s.eng.Incident(ctx, id)
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	if err == nil && !Open(v.Record) {
		return Reject(engine.ErrNotFound, "expected to resolve incident with key '%d', but it is not open: it was resolved already", key)
	}
	if err := s.eng.RetryIncident(ctx, id); err != nil {
		if errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrFinished) {
			return Reject(engine.ErrNotFound, "expected to resolve incident with key '%d', but it is not open: %v", key, err)
		}
		return err
	}
	return nil
}

// Open reports whether an incident is open to a Camunda 8 client: not
// closed, and not retrying (its last transition a retry that has not
// failed yet).
func Open(r *incidents.Record) bool {
	if r.State.Closed() {
		return false
	}
	return len(r.History) == 0 || r.History[len(r.History)-1].Kind != incidents.Retried
}
