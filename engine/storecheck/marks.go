// Package storecheck notices damage to the store the engine cannot see
// from the server (docs/reliability.md, "A damaged store"): it keeps the
// high-water marks of every jetbpm stream in two places, compares them at
// start-up, cross-checks the traces of instances (jobs, timers, open tasks,
// open incidents, message subscriptions) against their checkpoints and
// the definitions against their pointers, and writes a record an operator
// acts on for each stream that went back, each instance it finds lost and
// each process whose definitions are gone; it also records the instances
// a partition quarantines, and closes records once what they name is back.
//
//	c := storecheck.New(storecheck.Config{JS: js, Meta: meta, Lost: lostKV, MarksFile: dir + "/jetbpm-marks"})
//	report, err := c.Check(ctx) // before the node writes anything
//	go c.Run(ctx, time.Second)  // marks, after each sync
//
// The comparison and the records are package lost's; this package reads
// and writes the store.
package storecheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/streams"
)

// Config is what a Checker reads and writes.
type Config struct {
	JS jetstream.JetStream
	// Meta is the bucket of cluster settings, where the marks are kept
	// (streams.MetaMarksKey); Lost the bucket of records (streams.LostBucket).
	Meta, Lost jetstream.KeyValue
	// MarksFile, when set, is the second place the marks are kept: a file
	// beside the embedded store, outside any stream.
	MarksFile string
	// Sync makes the store's writes durable; marks are taken before it is
	// called and written after, so they never claim what a power cut can
	// take back. nil: the server syncs by its own policy.
	Sync func(context.Context) error
	// Retention is how long a finished instance's checkpoint stays: a
	// trace older than that proves nothing (lost.Orphans).
	Retention time.Duration
	// Partitions is the store's count of instance partitions, which
	// address an instance's events and timers; zero leaves out the check
	// of the jobs and timers of living instances.
	Partitions int
	Now        func() time.Time
	Log        *slog.Logger
}

// A Checker checks the store and keeps its marks. Its methods are safe
// for concurrent use.
type Checker struct {
	cfg Config

	mu      sync.Mutex
	written lost.Marks // the marks this checker last wrote
}

// New returns a checker; Now and Log default to time.Now and slog.Default.
func New(cfg Config) *Checker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Checker{cfg: cfg}
}

// marked is whether a stream's last sequence is marked: every jetbpm
// stream and bucket but the two the check itself writes and the owners
// bucket, whose leases and heartbeats live for seconds (losing some is
// no damage: they are written again, or their holders' leases taken).
func marked(name string) bool {
	switch name {
	case streams.KVStream(streams.MetaBucket), streams.KVStream(streams.LostBucket), streams.KVStream(streams.OwnersBucket):
		return false
	}
	return streams.Jetbpm(name)
}

// lastSeqs returns the last sequence of every marked stream (one request
// per 256 streams).
func (c *Checker) lastSeqs(ctx context.Context) (map[string]uint64, error) {
	out := map[string]uint64{}
	list := c.cfg.JS.ListStreams(ctx)
	for info := range list.Info() {
		if marked(info.Config.Name) {
			out[info.Config.Name] = info.State.LastSeq
		}
	}
	if err := list.Err(); err != nil {
		return nil, fmt.Errorf("storecheck: list streams: %w", err)
	}
	return out, nil
}

// take returns the streams' last sequences now, as marks.
func (c *Checker) take(ctx context.Context) (lost.Marks, error) {
	seqs, err := c.lastSeqs(ctx)
	if err != nil {
		return lost.Marks{}, err
	}
	return lost.Marks{Streams: seqs, At: c.cfg.Now()}, nil
}

// Mark takes the last sequence of every stream, makes the store durable,
// and writes them as marks where they are kept, unless the marks written
// before hold them already.
func (c *Checker) Mark(ctx context.Context) error {
	taken, err := c.take(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written.Streams != nil && c.written.Covers(taken) {
		return nil // nothing written since: no sync, no write
	}
	if c.cfg.Sync != nil {
		if err := c.cfg.Sync(ctx); err != nil {
			return fmt.Errorf("storecheck: sync before marking: %w", err)
		}
	}
	return c.write(ctx, func(stored lost.Marks) lost.Marks { return stored.Merge(taken) })
}

// Run marks every interval until ctx ends; a failed round is logged and
// tried again at the next.
func (c *Checker) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.Mark(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Log.Warn("store marks not written", "err", err)
		}
	}
}

// maxMarkWrites bounds the compare-and-set of the marks key against other
// nodes writing theirs.
const maxMarkWrites = 5

// write sets the marks in both places to what change makes of the stored
// ones (the meta bucket's), with a compare-and-set, and records what it
// wrote. c.mu is held.
func (c *Checker) write(ctx context.Context, change func(lost.Marks) lost.Marks) error {
	for range maxMarkWrites {
		stored, rev, err := readMeta(ctx, c.cfg.Meta)
		if err != nil {
			return err
		}
		next := change(stored)
		data := next.EncodeFile()
		if rev == 0 {
			_, err = c.cfg.Meta.Create(ctx, streams.MetaMarksKey, data)
		} else {
			_, err = c.cfg.Meta.Update(ctx, streams.MetaMarksKey, data, rev)
		}
		if streams.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("storecheck: write marks: %w", err)
		}
		if err := c.writeFile(data); err != nil {
			return err
		}
		c.written = next
		return nil
	}
	return fmt.Errorf("storecheck: the marks changed under each of %d writes", maxMarkWrites)
}

// readMeta returns the marks in the meta bucket and their revision (0:
// none). Damaged marks are an error: they cannot be merged into.
func readMeta(ctx context.Context, meta jetstream.KeyValue) (lost.Marks, uint64, error) {
	entry, err := meta.Get(ctx, streams.MetaMarksKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return lost.Marks{}, 0, nil
	}
	if err != nil {
		return lost.Marks{}, 0, fmt.Errorf("storecheck: read marks: %w", err)
	}
	m, err := lost.DecodeFile(entry.Value())
	if err != nil {
		return lost.Marks{}, entry.Revision(), fmt.Errorf("storecheck: bucket %s, key %s: %w", streams.MetaBucket, streams.MetaMarksKey, err)
	}
	return m, entry.Revision(), nil
}

// writeFile replaces the marks file with data, durably: a new file,
// synced, renamed over the old one, and the directory synced.
func (c *Checker) writeFile(data []byte) error {
	path := c.cfg.MarksFile
	if path == "" {
		return nil
	}
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("storecheck: marks file: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("storecheck: marks file: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// stored returns the marks from both places, merged, and what kept either
// from being read (a damaged or unreadable copy: the other still counts).
func (c *Checker) stored(ctx context.Context) (lost.Marks, []string, error) {
	var problems []string
	m, _, err := readMeta(ctx, c.cfg.Meta)
	if err != nil {
		if !errors.Is(err, lost.ErrDamagedMarks) {
			return lost.Marks{}, nil, err
		}
		problems = append(problems, err.Error())
	}
	if c.cfg.MarksFile != "" {
		data, err := os.ReadFile(c.cfg.MarksFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			problems = append(problems, fmt.Sprintf("marks file %s: %v", c.cfg.MarksFile, err))
		default:
			f, err := lost.DecodeFile(data)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", c.cfg.MarksFile, err))
			} else {
				m = m.Merge(f)
			}
		}
	}
	return m, problems, nil
}

// Reset sets the marks, in both places, to where the streams are now,
// replacing what they held: after a restore from backup, which takes the
// streams back on purpose, so that the next start does not count it as a
// loss.
func (c *Checker) Reset(ctx context.Context) error {
	taken, err := c.take(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.write(ctx, func(lost.Marks) lost.Marks { return taken })
}
