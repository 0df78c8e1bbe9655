package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/storecheck"
	"github.com/jetbpm/jetbpm/streams"
)

// markEvery is how often a node takes the store's high-water marks.
const markEvery = time.Second

// storeWatch is this node's view of the lost bucket: every record, kept
// current by a watch, so /healthz and the metrics never ask the store.
type storeWatch struct {
	mu      sync.Mutex
	records map[string]lost.Record
}

func (w *storeWatch) apply(e jetstream.KeyValueEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(w.records, e.Key())
		return
	}
	w.records[e.Key()] = storecheck.DecodeRecord(e.Key(), e.Value())
}

func (w *storeWatch) all() []lost.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Collect(maps.Values(w.records))
}

// openInstances counts the open records of lost or damaged instances.
func (w *storeWatch) openInstances() int {
	n := 0
	for _, r := range w.all() {
		if r.Status == lost.Open && (r.Kind == lost.Instance || r.Kind == lost.Damaged) {
			n++
		}
	}
	return n
}

// checkStore runs the start-up check (docs/reliability.md, "A damaged
// store") before anything of this node writes, then follows the lost
// bucket and keeps the marks from runCtx on.
func (e *Engine) checkStore(ctx, runCtx context.Context) error {
	lostKV, err := e.js.KeyValue(ctx, streams.LostBucket)
	if err != nil {
		return fmt.Errorf("engine: bucket %s (a store provisioned by an older jetbpm gets it on its next provisioning): %w", streams.LostBucket, err)
	}
	e.lostKV = lostKV
	var durable func(context.Context) error
	if e.opts.Sync != nil {
		durable = e.opts.Sync.Sync
	}
	e.checker = storecheck.New(storecheck.Config{
		JS: e.js, Meta: e.meta, Lost: lostKV, MarksFile: e.opts.MarksFile, Sync: durable,
		Retention: e.opts.FinishedRetention, Partitions: e.layout.Partitions, Now: e.opts.Now, Log: e.log,
	})
	report, err := e.checker.Check(ctx)
	if err != nil {
		return fmt.Errorf("engine: store check: %w", err)
	}
	if report.Damaged() {
		e.log.Error("store damaged: what the store lost is recorded; see jetbpm store check",
			"streams_went_back", len(report.Gaps), "lost_instances", len(report.Lost), "read", report.Read, "took", report.Took)
	} else {
		e.log.Debug("store check: whole", "read", report.Read, "took", report.Took)
	}
	w, err := lostKV.WatchAll(runCtx)
	if err != nil {
		return fmt.Errorf("engine: watch bucket %s: %w", streams.LostBucket, err)
	}
	caughtUp := make(chan struct{})
	var once sync.Once
	e.done.Go(func() {
		err := streams.FollowWatch(runCtx, w, func() { once.Do(func() { close(caughtUp) }) }, e.damage.apply)
		if err != nil && runCtx.Err() == nil {
			e.log.Error("the watch of the lost bucket ended; /healthz may miss new damage records until restart", "err", err)
		}
	})
	select {
	case <-caughtUp:
	case <-ctx.Done():
		return fmt.Errorf("engine: reading bucket %s: %w", streams.LostBucket, ctx.Err())
	}
	e.done.Go(func() { e.checker.Run(runCtx, markEvery) })
	e.rechecks = make(chan struct{}, 1)
	e.done.Go(func() {
		for {
			select {
			case <-runCtx.Done():
				return
			case <-e.rechecks:
			}
			if report, err := e.checker.Check(runCtx); err != nil && runCtx.Err() == nil {
				e.log.Error("the store check after a loss under this node failed; run jetbpm store check", "err", err)
			} else if err == nil {
				e.log.Error("store check after a loss under this node", "streams_went_back", len(report.Gaps),
					"lost_instances", len(report.Lost), "put_back", len(report.Rearmed), "read", report.Read, "took", report.Took)
			}
		}
	})
	return nil
}

// recheck asks for a store check soon, without waiting: a partition found
// that the store lost what this node wrote. Asks while one is pending are
// one.
func (e *Engine) recheck() {
	select {
	case e.rechecks <- struct{}{}:
	default:
	}
}

// StoreDamage says in one line what damage to the store is recorded and
// open ("" when none): what /healthz shows as degraded. It reads this
// node's copy of the lost bucket, which a watch keeps current.
func (e *Engine) StoreDamage() string { return lost.Summary(e.damage.all()) }

// LostRecords returns the records of damage to the store, open and
// closed, by key (docs/reliability.md, "A damaged store").
func (e *Engine) LostRecords(ctx context.Context) ([]lost.Record, error) {
	recs, err := storecheck.Records(ctx, e.lostKV)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(recs, func(a, b lost.Record) int {
		if c := a.Detected.Compare(b.Detected); c != 0 {
			return c
		}
		return strings.Compare(a.Key(), b.Key())
	})
	return recs, nil
}

// CheckStore checks the store now as at start-up — the marks, then the
// cross-check — and records what it finds.
func (e *Engine) CheckStore(ctx context.Context) (storecheck.Report, error) {
	if e.checker == nil {
		return storecheck.Report{}, errors.New("engine: the store check is not running")
	}
	return e.checker.Check(ctx)
}

// DismissLost closes the open damage record under key as dismissed, with
// the operator's reason (required): what it names is accepted as lost.
func (e *Engine) DismissLost(ctx context.Context, key, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("%w: dismissing damage record %s needs a reason", ErrInvalid, key)
	}
	if err := e.writable(); err != nil {
		return err
	}
	return e.checker.Close(ctx, key, lost.Dismissed, reason)
}

// RecreateLost starts a new instance in place of the lost instance the
// open record under key names, and closes the record as recreated,
// naming it. The new instance is of the record's process (its version if
// known, else the latest), from its start event, with the variables the
// traces held: jetbpm cannot start an instance at an inner element, so
// what ran before the last known element runs again. Its id is the lost
// one's with "-recreated", so a recreate retried after an error starts no
// second instance.
func (e *Engine) RecreateLost(ctx context.Context, key string) (string, error) {
	rec, err := e.checker.Record(ctx, key)
	if err != nil {
		return "", err
	}
	switch {
	case rec.Status != lost.Open:
		return "", fmt.Errorf("damage record %s is %s already: %w", key, rec.Status, ErrFinished)
	case rec.Kind != lost.Instance && rec.Kind != lost.Damaged:
		return "", fmt.Errorf("%w: damage record %s is a %s record: only a lost instance can be recreated", ErrInvalid, key, rec.Kind)
	case rec.Process == "":
		return "", fmt.Errorf("%w: damage record %s: nothing in the store knew instance %s's process; restore it from a backup or dismiss the record", ErrInvalid, key, rec.Instance)
	}
	opts := []StartOption{Version(rec.Version)}
	if id := rec.Instance + "-recreated"; checkpoint.ValidID(id) {
		opts = append(opts, InstanceID(id))
	}
	id, err := e.Start(ctx, rec.Process, rec.Vars, opts...)
	if err != nil {
		return id, fmt.Errorf("recreating instance %s: %w", rec.Instance, err)
	}
	if err := e.checker.Close(ctx, key, lost.Recreated, "recreated as instance "+id); err != nil && !errors.Is(err, ErrFinished) {
		return id, err
	}
	return id, nil
}
