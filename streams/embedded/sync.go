package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Sync makes every write the server acknowledged before the call durable:
// it returns once the message blocks of every stream are on disk, or with
// the error that kept them from it.
//
// The server itself syncs only every sync interval (two minutes by
// default) unless Config.SyncAlways is set, which costs an fsync per
// message. Sync is the cheap way to the same guarantee: it fsyncs the
// blocks that changed since its last round, once for every caller waiting
// when the round starts (a group commit). It relies on what a single
// server's file store does: it writes each message into its block file
// before it acknowledges it, so an acknowledged write is in the page cache
// and an fsync of its file makes it durable. Since a round syncs every
// stream, one Sync after the last write an answer depends on makes all the
// earlier writes durable as well.
//
// What a round covers is the streams' message blocks: a block that grew or
// changed is synced, a new block with its directory, a block replaced by
// compaction under its new inode. A round reads a directory again only
// when its modification time moved (or is too recent to tell), so a quiet
// round costs an lstat per directory and block. Consumer state and stream indexes are
// not: the server rebuilds an index from the blocks, and a consumer whose
// acknowledgements were lost delivers those messages again. Metadata of
// streams and consumers is made durable by SyncAll, which callers run
// after creating them.
//
// A failed fsync is final: the file's pages may have been dropped, so a
// later success would prove nothing. Sync returns the error, naming the
// file, from then on; the process must restart to read the store from
// disk again.
func (s *Server) Sync(ctx context.Context) error {
	return s.syncer.sync(ctx)
}

// SyncAll fsyncs every file and directory of the JetStream store: the
// metadata of streams and consumers as well as their messages. It is
// slower than Sync (it walks the whole store) and meant for after
// provisioning.
func (s *Server) SyncAll() error {
	return s.syncer.syncAll()
}

// Failed returns what keeps the store from storing, nil while it works: a
// write the server could not make (a full disk, a failing one: the server
// then stores nothing more on that stream) or an fsync that failed. Once
// set it stays; restart the process when the disk works, or has room,
// again — the restart reads the store from disk. Sync returns it too.
func (s *Server) Failed() error { return s.syncer.failed() }

// SyncRounds is how many rounds Sync has run, for metrics and tests.
func (s *Server) SyncRounds() uint64 {
	s.syncer.mu.Lock()
	defer s.syncer.mu.Unlock()
	return s.syncer.rounds
}

// syncer runs the rounds of Server.Sync. One goroutine runs rounds while
// any caller waits; callers that arrive during a round wait for the next.
type syncer struct {
	dir      string       // the JetStream store: <StoreDir>/jetstream
	storeErr func() error // a write the server could not make (its log)

	mu      sync.Mutex
	next    *round // the round callers arriving now wait for; not started
	running bool
	err     error // the first failure, final
	rounds  uint64

	roundMu sync.Mutex // held by a round and by close
	blocks  map[string]*block
	dirs    map[string]*listing
}

type round struct {
	done chan struct{}
	err  error
}

// block is a message block file as the last round that synced it saw it
// (synced: when that round looked).
type block struct {
	f      *os.File
	ino    uint64
	size   int64
	mtime  time.Time
	synced time.Time
}

// listing is a directory's names as read at read, when it had mtime.
type listing struct {
	names []string
	mtime time.Time
	read  time.Time
}

func newSyncer(storeDir string, storeErr func() error) *syncer {
	return &syncer{dir: filepath.Join(storeDir, "jetstream"), storeErr: storeErr, blocks: map[string]*block{}, dirs: map[string]*listing{}}
}

// failed returns the store's failure, or the first failed fsync's.
func (y *syncer) failed() error {
	if err := y.storeErr(); err != nil {
		return err
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.err
}

func (y *syncer) sync(ctx context.Context) error {
	if err := y.storeErr(); err != nil {
		return err
	}
	y.mu.Lock()
	if y.err != nil {
		err := y.err
		y.mu.Unlock()
		return err
	}
	r := y.next
	if r == nil {
		r = &round{done: make(chan struct{})}
		y.next = r
	}
	if !y.running {
		y.running = true
		go y.run()
	}
	y.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("embedded: sync: %w", ctx.Err())
	}
}

// run runs rounds until nobody waits for one.
func (y *syncer) run() {
	for {
		y.mu.Lock()
		r := y.next
		if r == nil {
			y.running = false
			y.mu.Unlock()
			return
		}
		y.next = nil
		failed := y.err
		y.mu.Unlock()

		err := failed
		if err == nil {
			y.roundMu.Lock()
			err = y.syncBlocks()
			y.roundMu.Unlock()
		}

		y.mu.Lock()
		if err != nil && y.err == nil {
			y.err = err
		}
		r.err = y.err
		y.rounds++
		y.mu.Unlock()
		close(r.done)
	}
}

// syncBlocks fsyncs every message block that changed since the last round.
func (y *syncer) syncBlocks() error {
	seen := make(map[string]bool, len(y.blocks))
	accounts, err := y.list(y.dir)
	if err != nil {
		return err
	}
	for _, acc := range accounts {
		streamsDir := filepath.Join(y.dir, acc, "streams")
		streams, err := y.list(streamsDir)
		if err != nil {
			return err
		}
		for _, stream := range streams {
			msgs := filepath.Join(streamsDir, stream, "msgs")
			names, err := y.list(msgs)
			if err != nil {
				return err
			}
			newBlock := false
			for _, name := range names {
				if filepath.Ext(name) != ".blk" {
					continue
				}
				path := filepath.Join(msgs, name)
				seen[path] = true
				created, err := y.syncBlock(path)
				if err != nil {
					return err
				}
				newBlock = newBlock || created
			}
			if newBlock {
				if err := syncPath(msgs); err != nil {
					return err
				}
			}
		}
	}
	for path, b := range y.blocks {
		if !seen[path] {
			_ = b.f.Close()
			delete(y.blocks, path)
		}
	}
	return nil
}

// settled is how long ago a file or directory must have changed for an
// unchanged modification time to prove nothing changed since: the kernel
// stamps times from a coarse clock, so two changes a few milliseconds
// apart can carry the same time.
const settled = time.Second

// list returns the names in dir (none if it does not exist), read again
// only when the directory changed since the last read, or changed too
// shortly before it for its time to tell.
func (y *syncer) list(dir string) ([]string, error) {
	now := time.Now()
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		delete(y.dirs, dir)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: sync: %w", err)
	}
	if d := y.dirs[dir]; d != nil && d.mtime.Equal(st.ModTime()) && d.mtime.Before(d.read.Add(-settled)) {
		return d.names, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		delete(y.dirs, dir)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: sync: %w", err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	y.dirs[dir] = &listing{names: names, mtime: st.ModTime(), read: now}
	return names, nil
}

// syncBlock fsyncs path if it changed since the last round, and says
// whether it is a file the last round did not know.
func (y *syncer) syncBlock(path string) (created bool, err error) {
	now := time.Now()
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // removed meanwhile: its messages are gone
	}
	if err != nil {
		return false, fmt.Errorf("embedded: sync: %w", err)
	}
	ino := inodeOf(st)
	b := y.blocks[path]
	if b != nil && b.ino == ino && b.size == st.Size() && b.mtime.Equal(st.ModTime()) && b.mtime.Before(b.synced.Add(-settled)) {
		return false, nil
	}
	if b == nil || b.ino != ino {
		if b != nil {
			_ = b.f.Close()
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			delete(y.blocks, path)
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("embedded: sync: %w", err)
		}
		b = &block{f: f}
		y.blocks[path] = b
		created = true
	}
	if err := b.f.Sync(); err != nil {
		return false, fmt.Errorf("embedded: %w", err) // names the file
	}
	b.ino, b.size, b.mtime, b.synced = ino, st.Size(), st.ModTime(), now
	return created, nil
}

// close closes the block files the rounds keep open.
func (y *syncer) close() {
	y.roundMu.Lock()
	defer y.roundMu.Unlock()
	for path, b := range y.blocks {
		_ = b.f.Close()
		delete(y.blocks, path)
	}
}

func (y *syncer) syncAll() error {
	y.mu.Lock()
	failed := y.err
	y.mu.Unlock()
	if failed != nil {
		return failed
	}
	err := filepath.WalkDir(y.dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("embedded: sync: %w", err)
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		return syncPath(path)
	})
	if err != nil {
		y.mu.Lock()
		if y.err == nil {
			y.err = err
		}
		y.mu.Unlock()
	}
	return err
}

// syncPath fsyncs a file or a directory; one removed meanwhile is skipped.
func syncPath(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: sync: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("embedded: %w", err) // names the file
	}
	return nil
}

func inodeOf(st fs.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Ino
	}
	return 0
}
