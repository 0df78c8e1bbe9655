package index

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// Tasks is one engine node's view of the tasks bucket, so that
// Engine.Tasks lists without reading every record (docs/usertasks.md §2). A watch of
// every key of the bucket feeds it: first the record stored under each key
// (so a node that starts, or restarts, rebuilds it from the bucket), then
// every write as it happens. A finished record leaves the index when it
// expires (the bucket puts a marker the watch hears), so the index holds
// the open tasks plus those finished within the retention.
//
// The index keeps what filtering and ordering need, and each record's
// stored bytes; a list decodes only the records it returns. It lags the
// bucket by the watch's delivery, as the bucket lags the checkpoints by a
// publish: a task shows in a list a moment after its step.
type Tasks struct {
	kv  jetstream.KeyValue
	log *slog.Logger

	mu      sync.RWMutex
	entries map[string]*taskEntry // by KV key
	all     entrySet
	// The entries by the values of the fields a filter names.
	byGroup, byUser, byAssignee, byProcess, byInstance entrySets
	open                                               int // entries in an open state
	// ready is closed once the watch has delivered every record stored
	// when it started; read counts the records delivered since.
	ready chan struct{}
	read  int
}

// taskEntry is what the index keeps of one record.
type taskEntry struct {
	key, id, instance, process, assignee string
	users, groups                        []string
	state                                instance.TaskState
	priority                             int
	created                              int64 // Unix nanoseconds: compared on every visit
	due                                  time.Time
	revision                             uint64
	raw                                  []byte // the stored record (streams.Marshal)
}

// entrySet is a set of entries kept in a slice, so that a list walks it as
// fast as memory allows. A large set finds an entry's place for a removal
// in pos; a small one (most: an instance has a task or two) scans, and
// spends no map.
type entrySet struct {
	items []*taskEntry
	pos   map[*taskEntry]int // once the set has grown past smallSet
}

// smallSet is the size up to which a set scans for a removal.
const smallSet = 32

func (s *entrySet) add(e *taskEntry) {
	if s.pos != nil {
		s.pos[e] = len(s.items)
	} else if len(s.items) == smallSet {
		s.pos = make(map[*taskEntry]int, 2*smallSet)
		for i, x := range s.items {
			s.pos[x] = i
		}
		s.pos[e] = len(s.items)
	}
	s.items = append(s.items, e)
}

func (s *entrySet) remove(e *taskEntry) {
	var i int
	if s.pos != nil {
		var ok bool
		if i, ok = s.pos[e]; !ok {
			return
		}
		delete(s.pos, e)
	} else if i = slices.Index(s.items, e); i < 0 {
		return
	}
	last := len(s.items) - 1
	s.items[i] = s.items[last]
	if s.pos != nil && i != last {
		s.pos[s.items[i]] = i
	}
	s.items[last] = nil
	s.items = s.items[:last]
}

// entrySets maps a field's value to the entries holding it.
type entrySets map[string]*entrySet

func (s entrySets) add(value string, e *taskEntry) {
	if value == "" {
		return
	}
	set := s[value]
	if set == nil {
		set = &entrySet{}
		s[value] = set
	}
	set.add(e)
}

func (s entrySets) remove(value string, e *taskEntry) {
	if set := s[value]; set != nil {
		set.remove(e)
		if len(set.items) == 0 {
			delete(s, value)
		}
	}
}

// get returns the entries holding value (none: an empty set).
func (s entrySets) get(value string) []*taskEntry {
	if set := s[value]; set != nil {
		return set.items
	}
	return nil
}

// NewTasks returns the empty index of the tasks bucket kv; log hears of
// records it skips and of a watch that ends.
func NewTasks(kv jetstream.KeyValue, log *slog.Logger) *Tasks {
	ix := &Tasks{kv: kv, log: log}
	ix.reset()
	return ix
}

// reset empties the index, to be filled again by a new watch.
func (ix *Tasks) reset() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.entries, ix.all = map[string]*taskEntry{}, entrySet{}
	ix.byGroup, ix.byUser, ix.byAssignee, ix.byProcess, ix.byInstance = entrySets{}, entrySets{}, entrySets{}, entrySets{}, entrySets{}
	ix.open, ix.read = 0, 0
	ix.ready = make(chan struct{})
}

// Run follows the bucket until ctx ends. A watch that ends otherwise (its
// consumer lost for good) is started again on an empty index: records
// deleted meanwhile would otherwise stay.
func (ix *Tasks) Run(ctx context.Context) {
	for {
		err := ix.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		ix.log.Warn("task index: the watch of the tasks bucket ended; rebuilding the index", "bucket", streams.TasksBucket, "err", err)
		ix.reset()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (ix *Tasks) follow(ctx context.Context) error {
	w, err := ix.kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	return streams.FollowWatch(ctx, w, ix.caughtUp, ix.apply)
}

func (ix *Tasks) caughtUp() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	select {
	case <-ix.ready:
	default:
		close(ix.ready)
	}
}

// apply takes one write of the bucket: a record, or the marker of a
// record deleted or expired.
func (ix *Tasks) apply(kve jetstream.KeyValueEntry) {
	key := kve.Key()
	if kve.Operation() != jetstream.KeyValuePut {
		ix.mu.Lock()
		ix.read++
		ix.remove(key)
		ix.mu.Unlock()
		return
	}
	var t instance.Task
	if err := streams.Unmarshal(kve.Value(), &t); err != nil {
		ix.log.Warn("task index: skipping an undecodable task record", "key", key, "err", err)
		ix.mu.Lock()
		ix.read++
		ix.remove(key)
		ix.mu.Unlock()
		return
	}
	e := &taskEntry{
		key: key, id: t.ID, instance: t.Instance, process: t.ProcessID, assignee: t.Assignee,
		users: t.CandidateUsers, groups: t.CandidateGroups, state: t.State, priority: t.Priority,
		created: t.CreatedAt.UnixNano(), due: t.DueDate, revision: t.Revision, raw: kve.Value(),
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.read++
	if old := ix.entries[key]; old != nil {
		if old.revision > e.revision {
			return // the bucket's writes are compare-and-set on the revision; never expected
		}
		ix.remove(key)
	}
	ix.entries[key] = e
	ix.all.add(e)
	for _, g := range e.groups {
		ix.byGroup.add(g, e)
	}
	for _, u := range e.users {
		ix.byUser.add(u, e)
	}
	ix.byAssignee.add(e.assignee, e)
	ix.byProcess.add(e.process, e)
	ix.byInstance.add(e.instance, e)
	if !e.state.Finished() {
		ix.open++
	}
}

// remove drops key's entry; the caller holds mu.
func (ix *Tasks) remove(key string) {
	e := ix.entries[key]
	if e == nil {
		return
	}
	delete(ix.entries, key)
	ix.all.remove(e)
	for _, g := range e.groups {
		ix.byGroup.remove(g, e)
	}
	for _, u := range e.users {
		ix.byUser.remove(u, e)
	}
	ix.byAssignee.remove(e.assignee, e)
	ix.byProcess.remove(e.process, e)
	ix.byInstance.remove(e.instance, e)
	if !e.state.Finished() {
		ix.open--
	}
}

// Wait returns once the index has read every record the bucket held when
// its watch started, or an error when ctx ends or MaxCatchUp passes
// first.
func (ix *Tasks) Wait(ctx context.Context) error {
	ix.mu.RLock()
	ready := ix.ready
	ix.mu.RUnlock()
	select {
	case <-ready:
		return nil
	default:
	}
	timer := time.NewTimer(MaxCatchUp)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tasks: this node's task index is still reading bucket %s (%d records so far): %w", streams.TasksBucket, ix.records(), ctx.Err())
	case <-timer.C:
		return fmt.Errorf("tasks: this node's task index has not caught up with bucket %s within %s (%d records read); is JetStream reachable?",
			streams.TasksBucket, MaxCatchUp, ix.records())
	}
}

func (ix *Tasks) records() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.read
}

// List returns the records matching f in list order (highest priority,
// then oldest, then by id), from f.Offset, at most f.Limit (0: all).
func (ix *Tasks) List(f TaskFilter) ([]*instance.Task, error) {
	ix.mu.RLock()
	picked := ix.pick(f)
	ix.mu.RUnlock()
	out := make([]*instance.Task, 0, len(picked))
	for _, e := range picked {
		var t instance.Task
		if err := streams.Unmarshal(e.raw, &t); err != nil {
			return nil, fmt.Errorf("task %s: decode: %w", e.id, err)
		}
		out = append(out, &t)
	}
	return out, nil
}

// pick selects f's page; the caller holds mu for reading. It walks the
// smallest set of entries a filter field narrows the index to (every entry
// when f names none; for a candidate user and group, both their sets) and
// keeps the best Offset+Limit matches in a heap, so a page of a large list
// costs one pass over a slice and no full sort.
func (ix *Tasks) pick(f TaskFilter) []*taskEntry {
	walk, users := ix.all.items, []*taskEntry(nil) // users: the candidate user's set, walked too
	narrow := func(set []*taskEntry) {
		if len(set) < len(walk) {
			walk, users = set, nil
		}
	}
	if f.Instance != "" {
		narrow(ix.byInstance.get(f.Instance))
	}
	if f.ProcessID != "" {
		narrow(ix.byProcess.get(f.ProcessID))
	}
	if f.Assignee != "" {
		narrow(ix.byAssignee.get(f.Assignee))
	}
	if f.CandidateUser != "" || f.CandidateGroup != "" {
		u, g := ix.byUser.get(f.CandidateUser), ix.byGroup.get(f.CandidateGroup)
		if len(u)+len(g) < len(walk) {
			walk, users = g, u
		}
	}
	keep := f.Offset + f.Limit
	h := taskHeap{}
	visit := func(e *taskEntry) {
		switch {
		case !f.match(e):
		case f.Limit == 0 || len(h) < keep:
			heap.Push(&h, e)
		case before(e, h[0]):
			h[0] = e
			heap.Fix(&h, 0)
		}
	}
	for _, e := range walk {
		visit(e)
	}
	for _, e := range users {
		if !slices.Contains(e.groups, f.CandidateGroup) { // not walked already
			visit(e)
		}
	}
	out := []*taskEntry(h)
	slices.SortFunc(out, func(a, b *taskEntry) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	if f.Offset >= len(out) {
		return nil
	}
	return out[f.Offset:]
}

// before orders a list: highest priority first, then oldest, then by id.
func before(a, b *taskEntry) bool {
	switch {
	case a.priority != b.priority:
		return a.priority > b.priority
	case a.created != b.created:
		return a.created < b.created
	}
	return a.id < b.id
}

// taskHeap holds the best entries seen so far with the worst on top.
type taskHeap []*taskEntry

func (h taskHeap) Len() int           { return len(h) }
func (h taskHeap) Less(i, j int) bool { return before(h[j], h[i]) }
func (h taskHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *taskHeap) Push(x any)        { *h = append(*h, x.(*taskEntry)) }
func (h *taskHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// OpenCount is the number of open tasks.
func (ix *Tasks) OpenCount() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.open
}

// OldestOpen finds the creation time of the oldest open task of each
// process (a pass over the index, for a metrics scrape).
func (ix *Tasks) OldestOpen() map[string]time.Time {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	oldest := map[string]time.Time{}
	for _, e := range ix.all.items {
		if e.state.Finished() {
			continue
		}
		if t, ok := oldest[e.process]; !ok || e.created < t.UnixNano() {
			oldest[e.process] = time.Unix(0, e.created).UTC()
		}
	}
	return oldest
}
