package instance

import (
	"slices"
	"time"

	"github.com/jetbpm/jetbpm/jobs"
)

// Status is an instance's lifecycle state.
type Status string

// Instance statuses as stored. The views add "incident" for an active
// instance with open incidents (engine.StatusIncident).
const (
	Active     Status = "active"
	Completed  Status = "completed"
	Failed     Status = "failed"
	Terminated Status = "terminated"
)

// Finished reports whether s is terminal.
func (s Status) Finished() bool { return s == Completed || s == Failed || s == Terminated }

// RootScope is the id of the process-level variable scope.
const RootScope = "root"

// State is the checkpoint document of one instance.
type State struct {
	ID        string    `msgpack:"id"`
	ProcessID string    `msgpack:"process"`
	Version   int       `msgpack:"version"`
	Status    Status    `msgpack:"status"`
	StartedAt time.Time `msgpack:"startedAt"`
	EndedAt   time.Time `msgpack:"endedAt,omitempty"`
	Failure   *Failure  `msgpack:"failure,omitempty"`
	// Parent is set on a child instance: the call activity it reports to.
	Parent *ParentRef `msgpack:"parent,omitempty"`
	// BusinessKey is the caller's key for the instance (Camunda 7); a
	// catch without a correlation key is reachable by it.
	BusinessKey string `msgpack:"businessKey,omitempty"`
	// StartMessage is the message that started the instance at a message
	// start event; while the instance is active, a message with the same
	// non-empty key starts no other instance of the process.
	StartMessage *Correlation `msgpack:"startMessage,omitempty"`
	// Correlations are the ids (CorrelationID) of the last correlations
	// applied, newest last, so a redelivered one is recognised.
	Correlations []string `msgpack:"correlations,omitempty"`

	Tracks []*Track `msgpack:"tracks,omitempty"`
	Scopes []*Scope `msgpack:"scopes"`
	Waits  []*Wait  `msgpack:"waits,omitempty"`
	// Incidents are the open incidents; closed ones live in the incidents
	// bucket only.
	Incidents []*Incident `msgpack:"incidents,omitempty"`
	// Journal is the completion journal: the completed activities a
	// compensation can still undo, oldest first; Compensations are the
	// compensations running (compensation.go).
	Journal       []*Completion   `msgpack:"journal,omitempty"`
	Compensations []*Compensation `msgpack:"compensations,omitempty"`
	// Stuck are the parallel and inclusive joins that can never fire, found at the end
	// of each step (joins.go): the instance needs an operator.
	Stuck []StuckJoin `msgpack:"stuck,omitempty"`
	// Seq numbers everything the instance creates: tracks, scopes, activations.
	Seq uint64 `msgpack:"seq"`
	// Passed are the ids, sorted, of the nodes its tokens have left along a
	// sequence flow, of the end events they reached and of the flows they
	// took: the completed path an operator sees. A set of model ids, so it
	// never outgrows the model, however often a loop passes.
	Passed []string `msgpack:"passed,omitempty"`

	// Outbox holds effects written with this checkpoint and not yet known
	// to be published; OutboxBy names the engine session that wrote them.
	Outbox   []Effect `msgpack:"outbox,omitempty"`
	OutboxBy string   `msgpack:"outboxBy,omitempty"`
}

// Failure records why an instance failed.
type Failure struct {
	Node    string `msgpack:"node,omitempty" json:"node,omitempty"`
	Code    string `msgpack:"code,omitempty" json:"code,omitempty"`
	Message string `msgpack:"message" json:"message"`
}

// TrackState says what a track is doing at its node.
type TrackState string

// Track states.
const (
	Ready   TrackState = "ready"   // about to execute its node
	Waiting TrackState = "waiting" // parked on a wait or a sub-process
	Joining TrackState = "joining" // arrived at a parallel or inclusive join
	// Entered: its node's start listeners (Zeebe's jobs) are done; the
	// node's work runs next, without entering it again.
	Entered TrackState = "entered"
	// TrackIncident: the node failed; the track holds the token of an open
	// incident until it is retried, resolved, abandoned or overtaken.
	TrackIncident TrackState = "incident"
)

// Track is a token: one thread of execution at one node.
type Track struct {
	ID    string     `msgpack:"id"`
	Node  string     `msgpack:"node"`
	Scope string     `msgpack:"scope"`
	State TrackState `msgpack:"state"`
	// Flow is the sequence flow the track arrived by (joins count them).
	Flow string `msgpack:"flow,omitempty"`
	// Pred is the track this one continues (lineage).
	Pred string `msgpack:"pred,omitempty"`
	// Activation numbers this visit of Node; ids derived from it are unique
	// across loops.
	Activation uint64    `msgpack:"act"`
	EnteredAt  time.Time `msgpack:"enteredAt"`
	// Locals are the activity's input-mapped variables while it waits.
	Locals map[string]any `msgpack:"locals,omitempty"`
	// BoundariesArmed says this visit's timer boundaries are armed: on
	// entry, or when it failed before that. An incident retry's
	// track inherits it with the waits, so they are not armed again.
	BoundariesArmed bool `msgpack:"boundariesArmed,omitempty"`
	// Inner marks an iteration of a multi-instance activity (it runs the
	// activity, not the loop); Loop is set on the loop's body.
	Inner bool       `msgpack:"inner,omitempty"`
	Loop  *LoopState `msgpack:"loop,omitempty"`
	// Listener is the Zeebe execution listener whose job failed, set
	// while the track holds its incident: a retry runs that listener
	// again and goes on from there.
	Listener *ListenerAt `msgpack:"listener,omitempty"`
	// Fired is set while the start listeners of an event that has
	// happened (an event-based gateway's) run: Firing, and the variables
	// it completes with once they are done.
	Firing bool           `msgpack:"firing,omitempty"`
	Fired  map[string]any `msgpack:"fired,omitempty"`
	// Results and ResultNames are a multi-instance iteration's outputs,
	// held while its end listeners run.
	Results     map[string]any `msgpack:"results,omitempty"`
	ResultNames []string       `msgpack:"resultNames,omitempty"`
}

// ListenerAt names one of a node's Zeebe execution listeners: its event
// and its index in the node's JobListeners.
type ListenerAt struct {
	Event string `msgpack:"event"`
	Index int    `msgpack:"index"`
	// Process says the listener is the process's (Process.JobListeners),
	// run at its start event (start) or its last end (end).
	Process bool `msgpack:"process,omitempty"`
}

// Scope is a variable scope: the process, or one activation of a sub-process.
type Scope struct {
	ID     string `msgpack:"id"`
	Parent string `msgpack:"parent,omitempty"`
	// Owner is the track waiting at the sub-process node of this scope.
	Owner string         `msgpack:"owner,omitempty"`
	Vars  map[string]any `msgpack:"vars,omitempty"`
	// Iteration is the 1-based loop counter of a multi-instance iteration's
	// scope, 0 for other scopes.
	Iteration int `msgpack:"iteration,omitempty"`
	// Abandoned are the incidents abandoned on tracks of this scope.
	Abandoned []string `msgpack:"abandoned,omitempty"`
	// Interrupted says an interrupting event sub-process of this scope
	// was triggered: its event sub-processes catch nothing more.
	Interrupted bool `msgpack:"interrupted,omitempty"`
	// Compensation is set on the scope a compensation handler runs in:
	// the compensation (State.Compensations) it belongs to.
	Compensation string `msgpack:"compensation,omitempty"`
}

// WaitKind says what a wait is waiting for.
type WaitKind string

// Wait kinds.
const (
	TimerWait    WaitKind = "timer"    // intermediate timer catch event
	BoundaryWait WaitKind = "boundary" // timer boundary event of an activity
	JobWait      WaitKind = "job"      // an external service task's job
	// IncidentRetryWait is a scheduled incident retry.
	IncidentRetryWait WaitKind = "incidentRetry"
	// ChildWait is a call activity waiting for its child instance.
	ChildWait WaitKind = "child"
	// OperationWait is an in-process service task waiting for its
	// operation's result; Due is the operation's deadline.
	OperationWait WaitKind = "operation"
	// OperationWatch is the instance's one durable timer over the
	// deadlines of its operations (no track): due no later than the
	// earliest of them.
	OperationWatch WaitKind = "operationWatch"
	// MessageWait is an open message subscription of a catch event,
	// receive task, message boundary or event-based gateway branch.
	MessageWait WaitKind = "message"
	// UserTaskWait is a user task waiting to be completed; Task is the
	// task (tasks.go).
	UserTaskWait WaitKind = "userTask"
	// EventSubTimer is the timer start event of an event sub-process,
	// armed for an activation of its scope (Wait.Scope, no track).
	EventSubTimer WaitKind = "eventSubTimer"
	// TaskTimeoutWait is the timer of a user task's timeout task listener
	// (Listener names it), armed while the task is open.
	TaskTimeoutWait WaitKind = "taskTimeout"
)

// Timer reports whether waits of kind k are woken by a timer (a schedule
// on their timer subject).
func (k WaitKind) Timer() bool {
	return k == TimerWait || k == BoundaryWait || k == IncidentRetryWait || k == OperationWatch || k == EventSubTimer || k == TaskTimeoutWait
}

// Wait is something the instance is parked on. Its ID is the key an event
// must name to wake it; it is also the timer id published to JetStream.
type Wait struct {
	ID    string   `msgpack:"id"`
	Kind  WaitKind `msgpack:"kind"`
	Track string   `msgpack:"track"`
	// Scope is set instead of Track on the start event wait of an event
	// sub-process: the scope activation it was armed for.
	Scope string `msgpack:"scope,omitempty"`
	// Node is the node that owns the wait: the catch event, or the boundary event.
	Node   string    `msgpack:"node"`
	Due    time.Time `msgpack:"due,omitempty"`
	Armed  time.Time `msgpack:"armed,omitempty"`
	Firing int       `msgpack:"firing,omitempty"`
	// Job is the engine's record of a job wait's job.
	Job *jobs.State `msgpack:"job,omitempty"`
	// Listener is set on the job wait of a Zeebe execution listener.
	Listener *ListenerAt `msgpack:"listener,omitempty"`
	// Child is the instance a child wait waits for.
	Child string `msgpack:"child,omitempty"`
	// Sub is a message wait's subscription.
	Sub *Subscription `msgpack:"sub,omitempty"`
	// Task is a user task wait's task, without its variables (they are
	// the track's locals).
	Task *Task `msgpack:"task,omitempty"`
	// Timer is the value a timer wait's expression gave when it was armed
	// (model.Timer.Expr); a cycle's next firings keep it.
	Timer string `msgpack:"timer,omitempty"`
}

// Job returns the state of the live job with the given id, nil if the
// instance is not waiting on it (unknown, finished or cancelled).
func (s *State) Job(id string) *jobs.State {
	if w := s.wait(id); w != nil && w.Kind == JobWait {
		return w.Job
	}
	return nil
}

func (s *State) track(id string) *Track {
	for _, t := range s.Tracks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func (s *State) scope(id string) *Scope {
	for _, sc := range s.Scopes {
		if sc.ID == id {
			return sc
		}
	}
	return nil
}

func (s *State) wait(id string) *Wait {
	for _, w := range s.Waits {
		if w.ID == id {
			return w
		}
	}
	return nil
}

func (s *State) removeTrack(id string) {
	s.Tracks = slices.DeleteFunc(s.Tracks, func(t *Track) bool { return t.ID == id })
}

func (s *State) removeScope(id string) {
	s.Scopes = slices.DeleteFunc(s.Scopes, func(sc *Scope) bool { return sc.ID == id })
	// What completed in a scope that is gone can no longer be compensated.
	s.Journal = slices.DeleteFunc(s.Journal, func(c *Completion) bool { return c.Scope == id })
}

// ActiveNodes returns the nodes holding tokens, in track order, each once.
func (s *State) ActiveNodes() []string {
	var out []string
	for _, t := range s.Tracks {
		if !slices.Contains(out, t.Node) {
			out = append(out, t.Node)
		}
	}
	return out
}

// CalledInstances returns the child instances the call activities of the
// instance are waiting for, in the order they were started.
func (s *State) CalledInstances() []string {
	var out []string
	for _, w := range s.Waits {
		if w.Kind == ChildWait {
			out = append(out, w.Child)
		}
	}
	return out
}

// Variables returns the process-level variables.
func (s *State) Variables() map[string]any {
	if sc := s.scope(RootScope); sc != nil {
		return sc.Vars
	}
	return nil
}

// pass adds ids to s.Passed, keeping it sorted and without repeats.
func (s *State) pass(ids ...string) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if i, found := slices.BinarySearch(s.Passed, id); !found {
			s.Passed = slices.Insert(s.Passed, i, id)
		}
	}
}
