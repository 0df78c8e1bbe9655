package storecheck

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// Damaged records that instance id's checkpoint cannot be read for cause
// (once: a record of the instance there already stays as it is); created
// says whether this call wrote it.
func (c *Checker) Damaged(ctx context.Context, id string, cause error) (created bool, err error) {
	return c.record(ctx, lost.DamagedRecord(id, cause, c.cfg.Now()))
}

// WentBack records that instance id's checkpoint went back under a
// running node from revision wrote to found, and that the node wrote its
// copy back (once: a record of the instance there already stays).
func (c *Checker) WentBack(ctx context.Context, id string, wrote, found uint64) error {
	_, err := c.record(ctx, lost.WentBackRecord(id, wrote, found, c.cfg.Now()))
	return err
}

// Restored closes the open record of instance id, if there is one: its
// checkpoint is there and reads whole again.
func (c *Checker) Restored(ctx context.Context, id string) error {
	rec := lost.Record{Kind: lost.Instance, Instance: id}
	return c.closeRecord(ctx, rec.Key(), lost.Restored, "its checkpoint is there and reads whole again")
}

// Record returns the record under key, errdefs.ErrNotFound if none.
func (c *Checker) Record(ctx context.Context, key string) (*lost.Record, error) {
	entry, err := c.cfg.Lost.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return nil, fmt.Errorf("damage record %q: %w", key, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("storecheck: record %s: %w", key, err)
	}
	var rec lost.Record
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		return nil, fmt.Errorf("storecheck: record %s: %w", key, err)
	}
	return &rec, nil
}

// Close sets the open record under key to status with reason (an
// operator's action); errdefs.ErrNotFound if there is none, ErrFinished
// if it is closed already.
func (c *Checker) Close(ctx context.Context, key string, status lost.Status, reason string) error {
	rec, err := c.Record(ctx, key)
	if err != nil {
		return err
	}
	if rec.Status != lost.Open {
		return fmt.Errorf("damage record %s is %s already: %w", key, rec.Status, errdefs.ErrFinished)
	}
	return c.closeRecord(ctx, key, status, reason)
}

// closeRecord sets the record under key to status with reason, if it is
// open; nothing if there is none or it is closed.
func (c *Checker) closeRecord(ctx context.Context, key string, status lost.Status, reason string) error {
	for range maxMarkWrites {
		entry, err := c.cfg.Lost.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("storecheck: record %s: %w", key, err)
		}
		var rec lost.Record
		if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
			return fmt.Errorf("storecheck: record %s: %w", key, err)
		}
		if rec.Status != lost.Open {
			return nil
		}
		rec.Status, rec.Reason, rec.Closed = status, reason, c.cfg.Now()
		data, err := streams.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = c.cfg.Lost.Update(ctx, key, data, entry.Revision())
		if streams.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("storecheck: record %s: %w", key, err)
		}
		c.cfg.Log.Info("store damage record closed", "key", key, "status", status, "reason", reason)
		return nil
	}
	return fmt.Errorf("storecheck: record %s changed under each of %d writes", key, maxMarkWrites)
}

// record writes rec unless its key holds a record already; created says
// whether it wrote.
func (c *Checker) record(ctx context.Context, rec lost.Record) (created bool, err error) {
	data, err := streams.Marshal(rec)
	if err != nil {
		return false, fmt.Errorf("storecheck: record %s: %w", rec.Key(), err)
	}
	_, err = c.cfg.Lost.Create(ctx, rec.Key(), data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storecheck: record %s: %w", rec.Key(), err)
	}
	return true, nil
}

// DecodeRecord decodes the record stored under key; one that cannot be
// read is an open damaged record saying so (the damage stays visible).
func DecodeRecord(key string, value []byte) lost.Record {
	var rec lost.Record
	if err := streams.Unmarshal(value, &rec); err != nil {
		return lost.Record{Kind: lost.Damaged, Status: lost.Open, Detail: fmt.Sprintf("record %s cannot be read: %v", key, err)}
	}
	return rec
}

// Records returns the records in the lost bucket, open and closed, by key;
// one that cannot be read is returned as a damaged record of its key.
func Records(ctx context.Context, kv jetstream.KeyValue) ([]lost.Record, error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("storecheck: read bucket %s: %w", streams.LostBucket, err)
	}
	var out []lost.Record
	err = streams.FollowWatch(ctx, w, func() { w.Stop() }, func(e jetstream.KeyValueEntry) {
		out = append(out, DecodeRecord(e.Key(), e.Value()))
	})
	if err != nil && !errors.Is(err, streams.ErrWatchClosed) {
		return nil, fmt.Errorf("storecheck: read bucket %s: %w", streams.LostBucket, err)
	}
	return out, nil
}

// LostJob records instance id as lost, from its job (the message at seq in
// the jobs stream), unless a record of it is there already, and reports
// whether an open record names it: then the job should be kept back. A
// job older than the finished-instance retention is no evidence (its
// instance may have finished and expired), nor one that is gone.
func (c *Checker) LostJob(ctx context.Context, id string, seq uint64) (bool, error) {
	stream, err := c.cfg.JS.Stream(ctx, streams.JobsStream)
	if err != nil {
		return false, fmt.Errorf("storecheck: jobs stream: %w", err)
	}
	m, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storecheck: job message %d: %w", seq, err)
	}
	now := c.cfg.Now()
	if c.cfg.Retention > 0 && m.Time.Before(now.Add(-c.cfg.Retention)) {
		return false, nil
	}
	t := lost.Trace{Instance: id, Source: "job", ID: m.Header.Get(outbox.HeaderJob), At: m.Time}
	var j jobs.Job
	if jobs.UnmarshalJob(m.Data, &j) == nil {
		t.ID, t.Process, t.Element, t.Vars = j.ID, j.ProcessID, j.Node, j.Input
	}
	rec := lost.InstanceRecord(id, []lost.Trace{t}, now)
	created, err := c.record(ctx, rec)
	if err != nil {
		return false, err
	}
	if created {
		c.cfg.Log.Error("store damage: a worker reported on a job of an instance that is not there; the job is kept back: "+rec.Detail,
			"key", rec.Key(), "instance", id, "process", rec.Process, "element", rec.Element)
	}
	stored, err := c.Record(ctx, rec.Key())
	if err != nil {
		return false, err
	}
	return stored.Status == lost.Open, nil
}
