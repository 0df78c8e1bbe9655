package storecheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// A trace as the cross-check first sees it: from a subject or a header,
// the instance it names and maybe when. Only the traces of instances
// without a checkpoint are looked at closer (detail), which reads the
// message or record for what it knows, and may find it is no evidence
// after all (a finished task, a closed incident).
type trace struct {
	lost.Trace
	detail func(ctx context.Context, t *lost.Trace) (evidence bool, err error)
}

// Counts says how much of the store a check read.
type Counts struct {
	Checkpoints int `json:"checkpoints"`
	Jobs        int `json:"jobs"`
	Timers      int `json:"timers"`
	Tasks       int `json:"tasks"`
	Incidents   int `json:"incidents"`
	// Subscriptions are the open message subscriptions.
	Subscriptions int `json:"subscriptions"`
	// Signals are the signal index's entries: a catch waiting for a signal.
	Signals int `json:"signals"`
	// Unindexed are the streams whose index of subjects names more
	// subjects than the stream holds messages: the server lost messages
	// its index still names (seen after flipped bits), so the listing is
	// not evidence that a job or timer is there.
	Unindexed []string `json:"unindexed,omitempty"`
}

// traces lists what in the store names an instance.
func (c *Checker) traces(ctx context.Context, n *Counts) ([]trace, error) {
	var all []trace
	for _, read := range []func(context.Context, *Counts) ([]trace, error){c.jobTraces, c.timerTraces, c.taskTraces, c.incidentTraces, c.subscriptionTraces, c.signalTraces} {
		ts, err := read(ctx, n)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	return all, nil
}

// subjects lists the subjects of stream that match filter, with one
// request per 100,000 (no message is read), and returns the stream to
// read the few messages a closer look needs. A stream whose index names
// more subjects than it holds messages is counted in n.Unindexed.
func (c *Checker) subjects(ctx context.Context, n *Counts, stream, filter string) (jetstream.Stream, map[string]uint64, error) {
	s, err := c.cfg.JS.Stream(ctx, stream)
	if err != nil {
		return nil, nil, fmt.Errorf("storecheck: stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, nil, fmt.Errorf("storecheck: subjects of stream %s: %w", stream, err)
	}
	if info.State.Msgs < uint64(info.State.NumSubjects) {
		n.Unindexed = append(n.Unindexed, stream)
	}
	return s, info.State.Subjects, nil
}

// checkpoints returns the ids of the instances with a checkpoint, and the
// processes they are of (as keys name them: streams.Token), and what each
// instance waits on outside its checkpoint (checkpoint.HeaderOpen).
func (c *Checker) checkpoints(ctx context.Context, n *Counts) (ids, processes map[string]bool, open map[string]waiting, err error) {
	processes, open = map[string]bool{}, map[string]waiting{}
	ids, err = c.keys(ctx, streams.InstancesBucket, func(id string, h nats.Header) {
		if p := h.Get(checkpoint.HeaderProcess); p != "" {
			processes[streams.Token(p)] = true
		}
		jobs, timers, ok := checkpoint.OpenCounts(h)
		if !ok {
			jobs, timers = -1, -1 // unreadable: look at its value
		}
		if jobs != 0 || timers != 0 {
			open[id] = waiting{jobs: jobs, timers: timers}
		}
	})
	n.Checkpoints = len(ids)
	return ids, processes, open, err
}

// keys returns the keys of bucket that hold a value, read as messages
// (headers only, the last of each key): a subject listing does not do, as
// the server's index of subjects can still name messages it dropped.
func (c *Checker) keys(ctx context.Context, bucket string, each func(key string, h nats.Header)) (map[string]bool, error) {
	prefix := "$KV." + bucket + "."
	stream, err := c.cfg.JS.Stream(ctx, streams.KVStream(bucket))
	if err != nil {
		return nil, fmt.Errorf("storecheck: bucket %s: %w", bucket, err)
	}
	keys := map[string]bool{}
	if info, err := stream.Info(ctx); err != nil {
		return nil, fmt.Errorf("storecheck: bucket %s: %w", bucket, err)
	} else if info.State.Msgs == 0 {
		return keys, nil
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + ">"}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, HeadersOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("storecheck: read bucket %s: %w", bucket, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("storecheck: read bucket %s: %w", bucket, err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextMaxWait(quietFor))
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			break // the server counts as pending what it lost
		}
		if err != nil {
			return nil, fmt.Errorf("storecheck: read bucket %s: %w", bucket, err)
		}
		if m.Headers().Get("KV-Operation") == "" && m.Headers().Get(jetstream.MarkerReasonHeader) == "" {
			key := strings.TrimPrefix(m.Subject(), prefix)
			keys[key] = true
			if each != nil {
				each(key, m.Headers())
			}
		}
		if md, err := m.Metadata(); err == nil && md.NumPending == 0 {
			break
		}
	}
	return keys, nil
}

// definitions returns a record for each process whose definitions the
// store lost: one with stored versions but no latest version pointer (a
// deploy writes both in one atomic batch and nothing deletes either; its
// new starts fail as not deployed), and one that instances are of but
// that has no stored version at all (those instances cannot step).
// named are the processes the checkpoints name.
func (c *Checker) definitions(ctx context.Context, named map[string]bool, now time.Time) ([]lost.Record, error) {
	keys, err := c.keys(ctx, streams.DefinitionsBucket, nil)
	if err != nil {
		return nil, err
	}
	versioned := map[string]bool{}
	for k := range keys {
		rest, ok := strings.CutPrefix(k, "def.")
		if i := strings.LastIndexByte(rest, '.'); ok && i > 0 {
			versioned[rest[:i]] = true
		}
	}
	kv, err := c.cfg.JS.KeyValue(ctx, streams.DefinitionsBucket)
	if err != nil {
		return nil, fmt.Errorf("storecheck: definitions bucket: %w", err)
	}
	var out []lost.Record
	for _, p := range slices.Sorted(maps.Keys(versioned)) {
		if !keys["latest."+p] {
			out = append(out, lost.PointerRecord(p, now, nil))
			continue
		}
		// One pointer per process: each is read whole.
		entry, err := kv.Get(ctx, "latest."+p)
		if err != nil {
			continue // gone meanwhile: the next check sees it
		}
		var v any
		if err := streams.Unmarshal(entry.Value(), &v); err != nil {
			out = append(out, lost.PointerRecord(p, now, err))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(named)) {
		if !versioned[p] {
			out = append(out, lost.DefinitionRecord(p, now))
		}
	}
	return out, nil
}

// quietFor ends the reading of the checkpoints when no message came for
// as long although the server said more were pending: its count may
// include what it lost.
const quietFor = time.Second

// jobTraces lists the queued jobs: a job's subject ends in its id,
// "<instance>/<element>/<activation>" as a token ('/' escaped as "=2F").
func (c *Checker) jobTraces(ctx context.Context, n *Counts) ([]trace, error) {
	stream, subjects, err := c.subjects(ctx, n, streams.JobsStream, streams.JobsSubjects)
	if err != nil {
		return nil, err
	}
	var out []trace
	for subject := range subjects {
		// jetbpm.job.<topic>.<job id>
		tok := strings.Split(subject, ".")
		id, _, ok := strings.Cut(tok[len(tok)-1], "=2F")
		if !ok || len(tok) != 4 {
			continue
		}
		n.Jobs++
		out = append(out, trace{
			Trace: lost.Trace{Instance: id, Source: "job", ID: tok[3]},
			detail: func(ctx context.Context, t *lost.Trace) (bool, error) {
				return jobDetail(ctx, stream, subject, t)
			},
		})
	}
	return out, nil
}

// jobDetail reads the job for when it was queued, its id, process,
// element and input.
func jobDetail(ctx context.Context, stream jetstream.Stream, subject string, t *lost.Trace) (bool, error) {
	m, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil // done meanwhile: no longer there to prove anything
	}
	if err != nil {
		return false, fmt.Errorf("storecheck: job %s: %w", subject, err)
	}
	t.At = m.Time
	if id := m.Header.Get(outbox.HeaderJob); id != "" {
		t.ID = id
	}
	var j jobs.Job
	if err := jobs.UnmarshalJob(m.Data, &j); err != nil {
		return true, nil // its subject names the instance still
	}
	t.Process, t.Element, t.Vars = j.ProcessID, j.Node, j.Input
	return true, nil
}

// timerTraces lists the timer schedules (their subjects name instance and
// wait).
func (c *Checker) timerTraces(ctx context.Context, n *Counts) ([]trace, error) {
	stream, subjects, err := c.subjects(ctx, n, streams.EventsStream, streams.TimersSubjects)
	if err != nil {
		return nil, err
	}
	var out []trace
	for subject := range subjects {
		// jetbpm.tmr.<partition>.<instance>.<wait>
		tok := strings.SplitN(subject, ".", 5)
		if len(tok) != 5 {
			continue
		}
		n.Timers++
		out = append(out, trace{
			Trace: lost.Trace{Instance: tok[3], Source: "timer", ID: tok[4]},
			detail: func(ctx context.Context, t *lost.Trace) (bool, error) {
				m, err := stream.GetLastMsgForSubject(ctx, subject)
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					return false, nil // fired or cancelled meanwhile
				}
				if err != nil {
					return false, fmt.Errorf("storecheck: timer %s: %w", subject, err)
				}
				t.At = m.Time
				return true, nil
			},
		})
	}
	return out, nil
}

// taskTraces lists the user task records (their keys name the instance);
// only an open task is evidence.
func (c *Checker) taskTraces(ctx context.Context, n *Counts) ([]trace, error) {
	prefix := "$KV." + streams.TasksBucket + "."
	_, subjects, err := c.subjects(ctx, n, streams.KVStream(streams.TasksBucket), prefix+">")
	if err != nil {
		return nil, err
	}
	kv, err := c.cfg.JS.KeyValue(ctx, streams.TasksBucket)
	if err != nil {
		return nil, fmt.Errorf("storecheck: tasks bucket: %w", err)
	}
	var out []trace
	for subject := range subjects {
		key := strings.TrimPrefix(subject, prefix)
		id, _, ok := strings.Cut(key, ".")
		if !ok {
			continue
		}
		n.Tasks++
		out = append(out, trace{
			Trace: lost.Trace{Instance: id, Source: "task", ID: key},
			detail: func(ctx context.Context, t *lost.Trace) (bool, error) {
				entry, err := kv.Get(ctx, key)
				if errors.Is(err, jetstream.ErrKeyNotFound) {
					return false, nil
				}
				if err != nil {
					return false, fmt.Errorf("storecheck: task %s: %w", key, err)
				}
				var task instance.Task
				if err := streams.Unmarshal(entry.Value(), &task); err != nil {
					return true, nil // its key names the instance still
				}
				if task.State.Finished() {
					return false, nil // expires after the retention like its instance
				}
				t.ID, t.At, t.Process, t.Version, t.Element, t.Vars = task.ID, task.CreatedAt, task.ProcessID, task.Version, task.Node, task.Variables
				return true, nil
			},
		})
	}
	return out, nil
}

// incidentTraces reads every incident record; an open one is evidence.
func (c *Checker) incidentTraces(ctx context.Context, n *Counts) ([]trace, error) {
	kv, err := c.cfg.JS.KeyValue(ctx, streams.IncidentsBucket)
	if err != nil {
		return nil, fmt.Errorf("storecheck: incidents bucket: %w", err)
	}
	w, err := kv.WatchFiltered(ctx, []string{streams.IncidentKeys}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("storecheck: read incidents: %w", err)
	}
	var out []trace
	err = streams.FollowWatch(ctx, w, func() { w.Stop() }, func(e jetstream.KeyValueEntry) {
		var rec incidents.Record
		if streams.Unmarshal(e.Value(), &rec) != nil || rec.State.Closed() || rec.Instance == "" {
			return
		}
		n.Incidents++
		out = append(out, trace{Trace: lost.Trace{
			Instance: rec.Instance, Source: "incident", ID: rec.ID, At: rec.LastFailure,
			Process: rec.ProcessID, Version: rec.Version, Element: rec.Node,
		}})
	})
	if err != nil && !errors.Is(err, streams.ErrWatchClosed) {
		return nil, fmt.Errorf("storecheck: read incidents: %w", err)
	}
	return out, nil
}

// subscriptionTraces reads every message partition entry; each open
// subscription names the instance waiting for the message.
func (c *Checker) subscriptionTraces(ctx context.Context, n *Counts) ([]trace, error) {
	kv, err := c.cfg.JS.KeyValue(ctx, streams.MessagesBucket)
	if err != nil {
		return nil, fmt.Errorf("storecheck: messages bucket: %w", err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("storecheck: read message entries: %w", err)
	}
	var out []trace
	err = streams.FollowWatch(ctx, w, func() { w.Stop() }, func(e jetstream.KeyValueEntry) {
		var entry struct {
			Subs []instance.Subscription `msgpack:"subs,omitempty"`
		}
		if streams.Unmarshal(e.Value(), &entry) != nil {
			return
		}
		for _, sub := range entry.Subs {
			if sub.Instance == "" {
				continue
			}
			n.Subscriptions++
			out = append(out, trace{Trace: lost.Trace{
				Instance: sub.Instance, Source: "subscription", ID: sub.Name + "/" + sub.Key + "/" + sub.Wait, At: sub.Opened,
				Process: sub.ProcessID,
			}})
		}
	})
	if err != nil && !errors.Is(err, streams.ErrWatchClosed) {
		return nil, fmt.Errorf("storecheck: read message entries: %w", err)
	}
	return out, nil
}

// signalTraces lists the signal index's entries (their keys name signal,
// instance and wait); an entry still there is evidence, a purged one (a
// closed wait) is not.
func (c *Checker) signalTraces(ctx context.Context, n *Counts) ([]trace, error) {
	prefix := "$KV." + streams.SignalsBucket + "."
	_, subjects, err := c.subjects(ctx, n, streams.KVStream(streams.SignalsBucket), prefix+">")
	if err != nil {
		return nil, err
	}
	kv, err := c.cfg.JS.KeyValue(ctx, streams.SignalsBucket)
	if err != nil {
		return nil, fmt.Errorf("storecheck: signals bucket: %w", err)
	}
	var out []trace
	for subject := range subjects {
		key := strings.TrimPrefix(subject, prefix)
		id, wait, err := streams.ParseSignalKey(key)
		if err != nil {
			continue
		}
		n.Signals++
		out = append(out, trace{
			Trace: lost.Trace{Instance: id, Source: "signal", ID: key},
			detail: func(ctx context.Context, t *lost.Trace) (bool, error) {
				entry, err := kv.Get(ctx, key)
				if errors.Is(err, jetstream.ErrKeyNotFound) {
					return false, nil // the wait closed
				}
				if err != nil {
					return false, fmt.Errorf("storecheck: signal entry %s: %w", key, err)
				}
				var e struct {
					Process string    `msgpack:"process"`
					Opened  time.Time `msgpack:"opened"`
				}
				if streams.Unmarshal(entry.Value(), &e) == nil {
					t.Process, t.At = e.Process, e.Opened
				}
				t.Element = elementOf(id, wait)
				return true, nil
			},
		})
	}
	return out, nil
}

// elementOf returns the element a wait id of instance id names
// ("<instance>/<element>/<activation>"), "" when it names none.
func elementOf(id, wait string) string {
	rest, ok := strings.CutPrefix(wait, id+"/")
	if i := strings.LastIndexByte(rest, '/'); ok && i > 0 {
		return rest[:i]
	}
	return ""
}
