package timerstarts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/streams"
)

// errDied is returned by a test hook that makes the engine behave as if
// its process died at that point.
var errDied = errors.New("test: died here")

// reconcile runs when an engine node starts: it makes sure the
// latest version of every deployed process with a timer start event is
// scheduled (docs/timerstart.md §3). A deploy that died between its batch
// and its schedule write left the timer unarmed, or armed by the previous
// version's schedule; every other state is left alone. Each node runs it;
// conditional writes make the nodes agree on one schedule.
func (t *Starter) reconcile(ctx context.Context) error {
	lister, err := t.cfg.Defs.KV().ListKeysFiltered(ctx, streams.LatestKeys)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	stream, err := t.cfg.JS.Stream(ctx, streams.TimerStartsStream)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		process, err := streams.Untoken(strings.TrimPrefix(k, "latest."))
		if err == nil {
			err = t.reconcileOne(ctx, stream, process)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("process %s: %w", process, err))
		}
	}
	return errors.Join(errs...)
}

// reconcileOne arms the timer start of process's latest version if
// nothing else will: no fire of it waits for a handler, no schedule of it
// is set, and no handler has taken a fire of it (a taken fire's handler
// scheduled the next one, or the timer is done).
func (t *Starter) reconcileOne(ctx context.Context, stream jetstream.Stream, process string) error {
	latest, _, err := t.cfg.Defs.Latest(ctx, process)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	p, err := t.cfg.Defs.Get(ctx, process, latest.Version)
	if err != nil {
		return err
	}
	starts := p.TimerStarts()
	if len(starts) == 0 {
		return nil // an older version's leftover schedule fires once and is dropped
	}
	n := starts[0]
	mine := func(f *fire) bool { return f != nil && f.Version == latest.Version && f.Node == n.ID }
	pending, _, err := lastTimerMsg(ctx, stream, streams.TimerStartFireSubject(process))
	if err != nil || mine(pending) {
		return err
	}
	sched, seq, err := lastTimerMsg(ctx, stream, streams.TimerStartSchedule(process))
	if err != nil || mine(sched) {
		return err
	}
	rec, _, err := lastTimerMsg(ctx, stream, streams.TimerStartRecord(process))
	if err != nil {
		return err
	}
	var next fire
	switch {
	case mine(rec) && rec.Taken:
		return nil
	case mine(rec):
		// Armed by the deploy, whose schedule write was lost: the same
		// fire, even if its due time has passed (it then fires once now).
		next = *rec
	default:
		// The deploy died before it armed the timer: arm it from now.
		now := t.cfg.Now()
		firing, due, ok := n.Timer.NextFire(now, time.Time{}, now, 0)
		if !ok {
			return nil
		}
		next = fire{Process: process, Version: latest.Version, Node: n.ID, Firing: firing, Due: due, Armed: now}
		if err := t.publishTimerRecord(ctx, next); err != nil {
			return err
		}
	}
	if err := t.publishTimerStart(ctx, next, &seq); err != nil {
		if streams.IsConflict(err) {
			return nil // another node, or a deploy, set the schedule meanwhile
		}
		return err
	}
	t.cfg.Log.Info("timer starts: armed a timer start whose schedule was lost", "process", process, "version", next.Version, "due", next.Due)
	return nil
}

// lastTimerMsg returns the last message on subject of the timer starts
// stream, decoded, and its sequence; nil and 0 if there is none.
func lastTimerMsg(ctx context.Context, stream jetstream.Stream, subject string) (*fire, uint64, error) {
	m, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", subject, err)
	}
	var f fire
	if err := streams.Unmarshal(m.Data, &f); err != nil {
		return nil, m.Sequence, fmt.Errorf("decode %s: %w", subject, err)
	}
	return &f, m.Sequence, nil
}
