package instance

import (
	"fmt"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
)

// Incident is an open incident's working state on the checkpoint: its
// record (what operators see) and the track that holds its token.
type Incident struct {
	incidents.Record `msgpack:"record"`
	// Track is the track in state incident at Node; Retries counts the
	// incident retries started (the incident retry policy's attempts).
	Track   string `msgpack:"track"`
	Retries int    `msgpack:"retries,omitempty"`
}

// maxHistory bounds the transitions kept on the checkpoint; the full
// history is in the incident's record.
const maxHistory = 64

func (s *State) incidentOf(trackID string) *Incident {
	for _, inc := range s.Incidents {
		if inc.Track == trackID {
			return inc
		}
	}
	return nil
}

func (s *State) incident(id string) *Incident {
	for _, inc := range s.Incidents {
		if inc.ID == id {
			return inc
		}
	}
	return nil
}

// OpenIncidents returns the ids of the instance's open incidents.
func (s *State) OpenIncidents() []*Incident { return s.Incidents }

// raise turns a technical failure at n into an incident: the
// track stays at the node in state incident, keeping its scope open and its
// boundaries armed; a retry of the same incident raises it again.
func (r *runner) raise(t *Track, n *model.Node, class, cause string) {
	inc := r.s.incidentOf(t.ID)
	if inc != nil && inc.Node != n.ID {
		// The track was retried at inc.Node, got past it and now fails
		// elsewhere: that retry succeeded, and this is another incident.
		r.closeIncident(inc, incidents.Resolved, incidents.ResolvedKind, "", "the retry succeeded")
		inc = nil
	}
	if inc == nil {
		id := r.waitID(n.ID, t.Activation)
		if isTimeout(t.Listener) {
			// The task stays open: each of its listener's failures is
			// an incident of its own.
			id = r.waitID(fmt.Sprintf("%s#timeout%d.%d", n.ID, t.Listener.Index+1, r.next()), t.Activation)
		}
		inc = &Incident{Track: t.ID, Record: incidents.Record{
			ID: id, Instance: r.s.ID, ProcessID: r.s.ProcessID, Version: r.s.Version,
			Node: n.ID, FirstFailure: r.env.Now, State: incidents.Open,
		}}
		r.s.Incidents = append(r.s.Incidents, inc)
		r.armStuckBoundaries(t, n)
	}
	if len(inc.Lineage) == 0 || inc.Lineage[len(inc.Lineage)-1] != t.ID {
		inc.Lineage = append(inc.Lineage, t.ID) // a retry's track is in already
	}
	inc.CauseClass, inc.LastFailure = class, r.env.Now
	inc.Causes = append(inc.Causes, cause)
	if len(inc.Causes) > 10 {
		inc.Causes = inc.Causes[len(inc.Causes)-10:]
	}
	inc.Attempts++
	t.State = TrackIncident
	if t.Listener == nil {
		t.Locals = nil // a retry enters the node again; a listener's keeps what the node had
	}
	inc.Snapshots = append(inc.Snapshots, inc.Attempts)
	r.s.Outbox = append(r.s.Outbox, Effect{ID: fmt.Sprintf("snapshot:%s:%d", inc.ID, inc.Attempts), Kind: PutSnapshot, Snapshot: &incidents.Snapshot{
		Incident: inc.ID, Attempt: inc.Attempts, Time: r.env.Now, Vars: r.visible(t),
	}})
	r.transition(inc, incidents.Raised, "", cause)
	r.scheduleIncidentRetry(inc, t, n)
}

// armStuckBoundaries arms the timer boundaries of an activity that failed
// before they were armed — one that never parks (a script task), or one
// that arms them on entry but failed before it parked (an input mapping, a multi-instance
// collection): its token now stays on the node, and an SLA timer must keep
// ticking over it, counted from when the node was entered.
//
// Its message boundaries are subscribed too, so a message can still
// interrupt the stuck activity; one whose subscription cannot be evaluated
// is left out (a retry that gets the activity to park evaluates it again,
// and faults on it). When a timer boundary's expression cannot be
// evaluated, no timer boundary is armed: the incident is what the
// operator sees.
func (r *runner) armStuckBoundaries(t *Track, n *model.Node) {
	if t.Inner {
		return
	}
	for _, b := range r.p.Boundaries(n.ID) {
		if b.Event != model.MessageEvent || r.waitsAt(t, b.ID) {
			continue
		}
		if sub, err := r.subscription(b, r.visible(t)); err == nil {
			sub.Repeat = !b.Interrupting
			r.subscribe(t, b.ID, t.Activation, sub)
		}
	}
	if t.BoundariesArmed {
		return
	}
	t.BoundariesArmed = true
	if timers, err := r.timerBoundaries(n, r.visible(t)); err == nil {
		r.armTimerBoundaries(t, timers, t.EnteredAt)
	}
}

// scheduleIncidentRetry arms a durable retry when the node's incident retry
// policy allows another attempt (by default none). Backoff is taken
// without jitter so the step stays deterministic.
func (r *runner) scheduleIncidentRetry(inc *Incident, t *Track, n *model.Node) {
	spec := r.env.IncidentRetry
	if n.IncidentRetry != nil {
		spec = *n.IncidentRetry
	}
	if spec.Kind == "" || spec.Kind == jobs.RetryNone {
		return
	}
	spec.Jitter = 0
	policy, err := spec.Policy(nil)
	if err != nil {
		return
	}
	backoff, again := policy.Retry(inc.Retries+1, nil)
	if !again {
		return
	}
	due := r.env.Now.Add(backoff)
	inc.RetryDue = due
	r.arm(&Wait{ID: fmt.Sprintf("%s/retry%d", inc.ID, inc.Retries+1), Kind: IncidentRetryWait, Track: t.ID, Node: n.ID, Due: due, Armed: r.env.Now})
	r.transition(inc, incidents.RetryScheduled, "", "retry at "+due.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}

// transition records one step of an incident's life: history, the record
// written to the incidents bucket, and the fact announcing it.
func (r *runner) transition(inc *Incident, kind incidents.Kind, cmd, detail string) {
	seq := 1
	if len(inc.History) > 0 {
		seq = inc.History[len(inc.History)-1].Seq + 1
	}
	inc.History = append(inc.History, incidents.Transition{Seq: seq, Kind: kind, Time: r.env.Now, Command: cmd, Detail: detail})
	if len(inc.History) > maxHistory {
		inc.History = inc.History[len(inc.History)-maxHistory:]
	}
	rec := inc.Record
	rec.Lineage, rec.Causes = slices.Clone(rec.Lineage), slices.Clone(rec.Causes)
	rec.History, rec.Snapshots = slices.Clone(rec.History), slices.Clone(rec.Snapshots)
	// A record written earlier in this step is superseded by this one.
	mine := slices.DeleteFunc(r.s.Outbox[r.outboxBase:], func(e Effect) bool {
		return e.Kind == PutIncident && e.Incident.ID == inc.ID
	})
	r.s.Outbox = append(r.s.Outbox[:r.outboxBase+len(mine)],
		Effect{ID: fmt.Sprintf("incident:%s:%d", inc.ID, seq), Kind: PutIncident, Incident: &rec},
		Effect{ID: fmt.Sprintf("ifact:%s.%d", inc.ID, seq), Kind: PublishIncidentFact, IncidentFact: &incidents.Fact{
			FactID: fmt.Sprintf("%s.%d", inc.ID, seq), Seq: seq, Kind: kind, Incident: inc.ID, Instance: r.s.ID,
			ProcessID: r.s.ProcessID, Node: inc.Node, CauseClass: inc.CauseClass, Time: r.env.Now, Detail: detail,
		}})
}

// closeIncident ends an incident in a final state.
func (r *runner) closeIncident(inc *Incident, state incidents.State, kind incidents.Kind, cmd, detail string) {
	inc.State, inc.RetryDue = state, timeZero
	r.dropRetryWait(inc)
	r.transition(inc, kind, cmd, detail)
	r.s.Incidents = slices.DeleteFunc(r.s.Incidents, func(x *Incident) bool { return x == inc })
}

func (r *runner) dropRetryWait(inc *Incident) {
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(w *Wait) bool {
		if w.Kind != IncidentRetryWait || w.Track != inc.Track {
			return false
		}
		r.unschedule(w)
		return true
	})
	inc.RetryDue = timeZero
}

// retryIncident re-enters the node on a new track whose predecessor is the
// failed one. Boundaries are not re-armed: their waits move
// to the new track.
func (r *runner) retryIncident(inc *Incident, cmd string) {
	failed := r.s.track(inc.Track)
	if failed == nil {
		r.bug("incident %s has no track %s", inc.ID, inc.Track)
	}
	r.dropRetryWait(inc)
	if failed.Loop != nil {
		// A multi-instance body's incident is its completion condition's:
		// the body owns the iterations, so it checks the condition again.
		inc.Retries++
		r.transition(inc, incidents.Retried, cmd, fmt.Sprintf("attempt %d", inc.Attempts+1))
		r.retryLoop(failed)
		return
	}
	nt := r.spawn(inc.Node, failed.Scope, failed.ID, failed.Flow)
	nt.BoundariesArmed, nt.Inner = failed.BoundariesArmed, failed.Inner
	if isTimeout(failed.Listener) {
		nt.Activation, nt.EnteredAt = failed.Activation, failed.EnteredAt // the same visit: its task is open
	}
	if failed.Listener != nil {
		// A listener's job failed: the retry runs it again, with what the
		// node had (its inputs, the listeners before it).
		nt.Listener, nt.Locals, nt.Firing, nt.Fired = failed.Listener, failed.Locals, failed.Firing, failed.Fired
		nt.Results, nt.ResultNames = failed.Results, failed.ResultNames
	}
	for _, w := range r.s.Waits {
		if w.Track == failed.ID {
			w.Track = nt.ID
		}
	}
	r.s.removeTrack(failed.ID)
	inc.Track = nt.ID
	inc.Lineage = append(inc.Lineage, nt.ID) // the attempts are track lineage
	inc.Retries++
	r.transition(inc, incidents.Retried, cmd, fmt.Sprintf("attempt %d", inc.Attempts+1))
}

// resolveIncident completes the node as if its work had succeeded, with
// vars as its results: the track continues from the node's
// outgoing flows. An iteration of a multi-instance activity completes
// inside its loop instead: vars are set in its iteration scope, where its
// output element reads them, and the loop goes on as after any iteration.
// A multi-instance body (its completion condition failed) completes the
// whole activity: its open iterations are cancelled.
//
// The track continues as a new activation, so a failure on the way (the
// vars refused, a flow's condition, the output element) raises a new
// incident rather than reopening the resolved one under its id.
func (r *runner) resolveIncident(inc *Incident, cmd string, vars map[string]any) {
	failed := r.s.track(inc.Track)
	n := r.p.Node(inc.Node)
	if failed == nil || n == nil {
		r.bug("incident %s has no track or node", inc.ID)
	}
	r.closeIncident(inc, incidents.Resolved, incidents.ResolvedKind, cmd, "")
	timeout := isTimeout(failed.Listener)
	if !timeout {
		failed.Activation = r.next()
	}
	names := sortedKeys(vars)
	values := make(map[string]any, len(vars))
	for _, k := range names {
		v, ok := r.checkVar(failed, n, k, vars[k])
		if !ok {
			return
		}
		values[k] = v
	}
	if timeout {
		// The listener's work is taken as done; its task stays open.
		for _, k := range names {
			r.storeVar(failed.Scope, k, values[k])
		}
		failed.Listener, failed.State = nil, Waiting
		return
	}
	if failed.Loop != nil {
		r.cancelIterations(failed)
	}
	failed.State = Ready
	if failed.Inner {
		// The operator asserts the work's effect exists: it can be
		// compensated like a completion.
		r.journal(failed, n, nil, values)
		r.completeIteration(failed, names, values)
		return
	}
	for _, k := range names {
		r.storeVar(failed.Scope, k, values[k])
	}
	if failed.Loop != nil {
		r.finishLoop(failed, n)
		return
	}
	r.journal(failed, n, nil, nil)
	r.disarm(failed)
	r.leave(failed, n)
}

// abandonIncident closes the incident as dead-lettered and cancels its
// track; an instance left with no token ends terminated.
func (r *runner) abandonIncident(inc *Incident, cmd string) {
	failed := r.s.track(inc.Track)
	r.closeIncident(inc, incidents.DeadLettered, incidents.DeadLetterKind, cmd, "")
	if failed == nil {
		return
	}
	if sc := r.s.scope(failed.Scope); sc != nil {
		sc.Abandoned = append(sc.Abandoned, inc.ID) // named if a join waits in vain
	}
	r.cancelTrack(failed)
	if sc := r.s.scope(failed.Scope); sc != nil && sc.Compensation != "" {
		r.scopeMaybeDone(sc.ID) // the compensation goes on with the next handler
		return
	}
	if len(r.s.Tracks) == 0 {
		if len(r.s.Journal) > 0 {
			// Completed work could be compensated: the instance waits
			// for the operator's next action (instance compensate or
			// cancel) with no token.
			return
		}
		r.finish(Terminated, nil, "incident "+inc.ID+" abandoned")
		return
	}
	r.scopeMaybeDone(failed.Scope)
}

// overtake closes the incident of a track the model or the instance
// cancels (an interrupting boundary, a terminate end, a cancel).
func (r *runner) overtake(t *Track, why string) {
	if inc := r.s.incidentOf(t.ID); inc != nil {
		r.closeIncident(inc, incidents.Overtaken, incidents.OvertakenKind, "", why)
	}
}

// retrySucceeded closes the incident a retried track carried once the track
// has got past the incident's node: the retry worked.
func (r *runner) retrySucceeded(t *Track) {
	if inc := r.s.incidentOf(t.ID); inc != nil && inc.Node == t.Node && t.State != TrackIncident {
		r.closeIncident(inc, incidents.Resolved, incidents.ResolvedKind, "", "the retry succeeded")
	}
}
