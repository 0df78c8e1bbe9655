package storecheck

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/streams"
)

// A Report is what a Check found.
type Report struct {
	// Gaps are the streams that went below their marks.
	Gaps []lost.Gap `json:"gaps,omitempty"`
	// Lost are the instances the cross-check found without a checkpoint,
	// with what the store still knows of each.
	Lost []lost.Record `json:"lost,omitempty"`
	// Recorded counts the records this check wrote: a record found before
	// is not written again.
	Recorded int `json:"recorded"`
	// Definitions are the processes whose definitions the store lost: a
	// latest version pointer, or every version.
	Definitions []lost.Record `json:"definitions,omitempty"`
	// Rearmed are the jobs and timers of living instances the store lost,
	// which this check put back.
	Rearmed []lost.Record `json:"rearmed,omitempty"`
	// Restored are the instances whose open records this check closed:
	// their checkpoints are back and read whole (a restore).
	Restored []string `json:"restored,omitempty"`
	// Problems are copies of the marks that could not be read; the other
	// copy still counted.
	Problems []string `json:"problems,omitempty"`
	// Read says how much of the store the cross-check read, and Took how
	// long the check took.
	Read Counts        `json:"read"`
	Took time.Duration `json:"took"`
}

// Damaged reports whether the check found anything lost.
func (r *Report) Damaged() bool {
	return len(r.Gaps) > 0 || len(r.Lost) > 0 || len(r.Definitions) > 0 || len(r.Rearmed) > 0
}

// Check compares the store with its marks and cross-checks the traces of
// instances against their checkpoints; it writes a record for each stream
// that went back and each instance found lost (unless one is there
// already), logs each at ERROR, and lowers the marks of the streams that
// went back to where they are now, so the next check does not count the
// same loss again. Run it before the node writes anything: a write after
// a loss raises the last sequence over the lost one.
func (c *Checker) Check(ctx context.Context) (Report, error) {
	start := time.Now()
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var r Report
	marks, problems, err := c.stored(ctx)
	if err != nil {
		return r, err
	}
	r.Problems = problems
	for _, p := range problems {
		c.cfg.Log.Warn("store marks unreadable; the other copy counts", "problem", p)
	}
	seqs, err := c.lastSeqs(ctx)
	if err != nil {
		return r, err
	}
	r.Gaps = marks.Compare(seqs)

	// The traces first, then the checkpoints: a trace is written after
	// its instance's checkpoint, so an instance a trace names had its
	// checkpoint before the listing began.
	traces, err := c.traces(ctx, &r.Read)
	if err != nil {
		return r, err
	}
	ids, processes, open, err := c.checkpoints(ctx, &r.Read)
	if err != nil {
		return r, err
	}
	if r.Rearmed, err = c.unarmed(ctx, open, traces, r.Gaps, r.Read.Unindexed, now); err != nil {
		return r, err
	}
	if r.Lost, err = c.orphans(ctx, traces, ids, now); err != nil {
		return r, err
	}
	if r.Definitions, err = c.definitions(ctx, processes, now); err != nil {
		return r, err
	}
	if r.Restored, err = c.closeRestored(ctx, ids, r.Definitions); err != nil {
		return r, err
	}

	records := make([]lost.Record, 0, len(r.Gaps)+len(r.Lost)+len(r.Definitions))
	for _, g := range r.Gaps {
		records = append(records, lost.GapRecord(g, now))
	}
	records = append(records, r.Definitions...)
	records = append(records, r.Lost...)
	records = append(records, r.Rearmed...)
	for _, rec := range records {
		created, err := c.record(ctx, rec)
		if err != nil {
			return r, err
		}
		if created {
			r.Recorded++
			c.cfg.Log.Error("store damage: "+rec.Detail, "key", rec.Key(), "instance", rec.Instance, "process", rec.Process, "element", rec.Element)
		}
	}
	// From here on, the marks are where the streams are: the loss is
	// recorded, and new writes reuse the lost numbers.
	err = c.write(ctx, func(stored lost.Marks) lost.Marks {
		m := stored.Merge(marks)
		for _, g := range r.Gaps {
			if g.Gone {
				delete(m.Streams, g.Stream)
			} else {
				m.Streams[g.Stream] = g.Found
			}
		}
		return m.Merge(lost.Marks{Streams: seqs, At: now})
	})
	r.Took = time.Since(start)
	return r, err
}

// orphans returns a record for each instance that traces name and ids
// does not hold, after a closer look at each of its traces.
func (c *Checker) orphans(ctx context.Context, traces []trace, ids map[string]bool, now time.Time) ([]lost.Record, error) {
	plain := make([]lost.Trace, len(traces))
	for i, t := range traces {
		plain[i] = t.Trace
	}
	notBefore := now.Add(-c.cfg.Retention)
	if c.cfg.Retention == 0 {
		notBefore = time.Time{}
	}
	candidates := lost.Orphans(plain, func(id string) bool { return ids[id] }, notBefore)
	if len(candidates) == 0 {
		return nil, nil
	}
	// The traces of each candidate, gathered in one pass.
	byID := make(map[string][]trace, len(candidates))
	for _, t := range traces {
		if _, ok := candidates[t.Instance]; ok && (t.At.IsZero() || !t.At.Before(notBefore)) {
			byID[t.Instance] = append(byID[t.Instance], t)
		}
	}
	var out []lost.Record
	for _, id := range slices.Sorted(maps.Keys(candidates)) {
		var evidence []lost.Trace
		for _, t := range byID[id] {
			found := t.Trace
			if t.detail != nil {
				ok, err := t.detail(ctx, &found)
				if err != nil {
					return nil, err
				}
				if !ok || !found.At.IsZero() && found.At.Before(notBefore) {
					continue
				}
			}
			evidence = append(evidence, found)
		}
		if len(evidence) > 0 {
			out = append(out, lost.InstanceRecord(id, evidence, now))
		}
	}
	return out, nil
}

// closeRestored closes the open record of each instance whose checkpoint
// is back (in ids) and reads whole, and of each process whose definitions
// are whole again (not in defs), and returns the instances.
func (c *Checker) closeRestored(ctx context.Context, ids map[string]bool, defs []lost.Record) ([]string, error) {
	recs, err := Records(ctx, c.cfg.Lost)
	if err != nil {
		return nil, err
	}
	var kv jetstream.KeyValue
	var out []string
	for _, rec := range recs {
		if rec.Status == lost.Open && rec.Kind == lost.Definition &&
			!slices.ContainsFunc(defs, func(d lost.Record) bool { return d.Process == rec.Process }) {
			if err := c.closeRecord(ctx, rec.Key(), lost.Restored, "its definitions are back"); err != nil {
				return nil, err
			}
			continue
		}
		if rec.Status != lost.Open || rec.Kind == lost.Stream || !ids[rec.Instance] {
			continue
		}
		if kv == nil {
			if kv, err = c.cfg.JS.KeyValue(ctx, streams.InstancesBucket); err != nil {
				return nil, fmt.Errorf("storecheck: instances bucket: %w", err)
			}
		}
		entry, err := kv.Get(ctx, rec.Instance)
		if err != nil {
			continue // gone again, or unreadable: it stays open
		}
		var v any
		if streams.Unmarshal(entry.Value(), &v) != nil {
			continue
		}
		if err := c.Restored(ctx, rec.Instance); err != nil {
			return nil, err
		}
		out = append(out, rec.Instance)
	}
	return out, nil
}
