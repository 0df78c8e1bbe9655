package storecheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/streams"
)

// waiting is what a checkpoint's headers say its instance waits on
// outside it (checkpoint.HeaderOpen); -1 when the header is unreadable.
type waiting struct{ jobs, timers int }

// settle is how long after it was armed a wait's job or timer may still
// be on its way: the step's effects are published after its checkpoint
// is written, and the event that caused the step is delivered again
// until they are. A wait younger than this is not looked at.
const settle = time.Minute

// unarmed finds the waits of living instances whose job or timer
// schedule the store lost, puts each back (a Rearm event to its
// instance) and returns a record of each. Only instances whose
// checkpoint headers count more jobs or timers than the listings hold
// are read, unless the jobs or events stream went back (gaps) or its
// index names more subjects than it holds messages (unindexed): then the
// server's listing of subjects can still name messages it dropped
// (TestLostJobsAndTimersArePutBack, flipped bits), and every instance
// that waits on one is read.
func (c *Checker) unarmed(ctx context.Context, open map[string]waiting, traces []trace, gaps []lost.Gap, unindexed []string, now time.Time) ([]lost.Record, error) {
	if c.cfg.Partitions == 0 || len(open) == 0 {
		return nil, nil
	}
	listed := map[string]waiting{}
	for _, t := range traces {
		n := listed[t.Instance]
		switch t.Source {
		case "job":
			n.jobs++
		case "timer":
			n.timers++
		}
		listed[t.Instance] = n
	}
	distrust := func(stream string) bool {
		return slices.Contains(unindexed, stream) || slices.ContainsFunc(gaps, func(g lost.Gap) bool { return g.Stream == stream })
	}
	jobsBack, timersBack := distrust(streams.JobsStream), distrust(streams.EventsStream)
	var ids []string
	for id, want := range open {
		have := listed[id]
		if want.jobs < 0 || want.jobs > have.jobs || want.timers > have.timers ||
			jobsBack && want.jobs > 0 || timersBack && want.timers > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	kv, err := c.cfg.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		return nil, fmt.Errorf("storecheck: instances bucket: %w", err)
	}
	jobs, err := c.cfg.JS.Stream(ctx, streams.JobsStream)
	if err != nil {
		return nil, fmt.Errorf("storecheck: stream %s: %w", streams.JobsStream, err)
	}
	events, err := c.cfg.JS.Stream(ctx, streams.EventsStream)
	if err != nil {
		return nil, fmt.Errorf("storecheck: stream %s: %w", streams.EventsStream, err)
	}
	var out []lost.Record
	for _, id := range ids {
		entry, err := kv.Get(ctx, id)
		if err != nil {
			continue // gone meanwhile (finished and expired), or lost: the traces tell
		}
		var s instance.State
		if streams.Unmarshal(entry.Value(), &s) != nil {
			continue // damaged: quarantined when it steps
		}
		p := streams.PartitionOf(id, c.cfg.Partitions)
		var pending *bool // whether events wait for the instance: looked up once
		for _, w := range s.Waits {
			if now.Sub(w.Armed) < settle {
				continue
			}
			var subject, what string
			var stream jetstream.Stream
			switch {
			case w.Kind == instance.JobWait && w.Job != nil:
				subject, stream = streams.JobSubject(w.Job.Topic, w.ID), jobs
				what = fmt.Sprintf("job %s (topic %s)", w.ID, w.Job.Topic)
			case w.Kind.Timer():
				subject, stream = streams.TimerSubject(p, id, w.ID), events
				what = fmt.Sprintf("timer %s due %s", w.ID, w.Due.UTC().Format(time.RFC3339))
			default:
				continue
			}
			there, err := has(ctx, stream, subject)
			if err != nil {
				return nil, err
			}
			if there {
				continue
			}
			if w.Kind != instance.JobWait {
				// A timer that fired left its event: the instance steps it
				// first.
				if pending == nil {
					found, err := has(ctx, events, streams.EventSubject(p, id))
					if err != nil {
						return nil, err
					}
					pending = &found
				}
				if *pending {
					continue
				}
			}
			// After flipped bits the server's index of subjects can still
			// name the lost message, and a new schedule published on the
			// subject is dropped with it (TestLostJobsAndTimersArePutBack):
			// the purge of what cannot be read clears the index.
			if err := stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
				return nil, fmt.Errorf("storecheck: purge %s: %w", subject, err)
			}
			if err := c.rearm(ctx, p, id, w); err != nil {
				return nil, err
			}
			out = append(out, lost.WaitRecord(id, s.ProcessID, s.Version, w.Node, streams.Token(w.ID), what, now))
		}
	}
	return out, nil
}

// has reports whether stream holds a message on subject.
func has(ctx context.Context, stream jetstream.Stream, subject string) (bool, error) {
	_, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storecheck: read %s: %w", subject, err)
	}
	return true, nil
}

// rearm sends instance id, of partition p, the event that puts back the
// job or timer of wait w (instance.Rearm). Its message id makes a second
// check within the stream's duplicate window send nothing more.
func (c *Checker) rearm(ctx context.Context, p int, id string, w *instance.Wait) error {
	ev := &instance.Event{ID: fmt.Sprintf("rearm:%s:%d", w.ID, w.Firing), Kind: instance.Rearm, Wait: w.ID, Firing: w.Firing}
	body, err := streams.Marshal(checkpoint.Envelope{Instance: id, Event: ev})
	if err != nil {
		return err
	}
	m := nats.NewMsg(streams.EventSubject(p, id))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, ev.ID)
	if _, err := c.cfg.JS.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("storecheck: put back %s of instance %s: %w", w.ID, id, err)
	}
	return nil
}
