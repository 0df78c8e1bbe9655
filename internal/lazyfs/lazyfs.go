// Package lazyfs simulates a power cut for tests, as Jepsen's LazyFS does:
// it mounts a directory through FUSE, passes every operation through to a
// backing directory, and remembers, per file, what each write since the
// file's last fsync replaced. Cut rolls every file back to its content at
// its last fsync (a file never synced comes back empty), as a machine that
// lost power would find it; metadata (creates, renames, removes) counts as
// durable, LazyFS's default.
//
// Cut unmounts first, so the process writing must be dead (SIGKILLed) by
// then, and mounts again, so the kernel's page cache of the mount cannot
// serve what the cut dropped.
//
// Mounting needs /dev/fuse and the right to mount (root, without
// fusermount); tests that cannot mount must skip and say so.
package lazyfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted lazy file system.
type FS struct {
	dir, backing string
	server       *fuse.Server

	mu    sync.Mutex
	files map[uint64]*pending // by the backing file's inode number
	// failSync, when not 0, is what every fsync returns, without syncing;
	// failWrite the same for writes (ENOSPC: a full disk).
	failSync, failWrite syscall.Errno
}

// FailSync makes every fsync fail with errno (syscall.EIO, say) and sync
// nothing, as a failing disk does; 0 makes fsync work again.
func (f *FS) FailSync(errno syscall.Errno) {
	f.mu.Lock()
	f.failSync = errno
	f.mu.Unlock()
}

// FailWrite makes every write fail with errno (syscall.ENOSPC, say) and
// write nothing, as a full disk does; 0 makes writes work again.
func (f *FS) FailWrite(errno syscall.Errno) {
	f.mu.Lock()
	f.failWrite = errno
	f.mu.Unlock()
}

func (f *FS) writeFailure() syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failWrite
}

func (f *FS) syncFailure() syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failSync
}

// pending is what a file's writes replaced since its last fsync.
type pending struct {
	synced int64  // the file's size at its last fsync
	undo   []undo // in the order the writes came
}

// undo is the content a write replaced below the synced size.
type undo struct {
	off int64
	old []byte
}

// Mount mounts backing, an existing directory, at dir, an existing empty
// directory.
func Mount(dir, backing string) (*FS, error) {
	f := &FS{dir: dir, backing: backing, files: map[uint64]*pending{}}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *FS) mount() error {
	loop, err := gofs.NewLoopbackRoot(f.backing)
	if err != nil {
		return fmt.Errorf("lazyfs: backing directory: %w", err)
	}
	rootNode := &node{LoopbackNode: loop.(*gofs.LoopbackNode), fs: f}
	rootNode.RootData.RootNode = rootNode
	zero := time.Duration(0)
	server, err := gofs.Mount(f.dir, rootNode, &gofs.Options{
		// No caching in the kernel: every write reaches this process.
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{DirectMount: true, DirectMountStrict: true, FsName: "lazyfs", Name: "lazyfs"},
	})
	if err != nil {
		return fmt.Errorf("lazyfs: mount %s: %w", f.dir, err)
	}
	f.server = server
	return nil
}

// Unmount unmounts the file system; the backing directory keeps what was
// written, synced or not.
func (f *FS) Unmount() error {
	if f.server == nil {
		return nil
	}
	err := f.server.Unmount()
	f.server = nil
	return err
}

// Cut drops every write not fsynced: it unmounts, rolls each written file
// of the backing directory back to its content at its last fsync, and
// mounts again. The writer must be dead.
func (f *FS) Cut() error {
	if err := f.Unmount(); err != nil {
		return fmt.Errorf("lazyfs: unmount for the cut: %w", err)
	}
	if err := f.rollBack(); err != nil {
		return err
	}
	return f.mount()
}

// rollBack applies the undo records of every file still in the backing
// directory, newest first, and truncates it to its synced size.
func (f *FS) rollBack() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	paths := map[uint64]string{}
	err := filepath.WalkDir(f.backing, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			return err
		}
		paths[st.Ino] = path
		return nil
	})
	if err != nil {
		return fmt.Errorf("lazyfs: walk for the cut: %w", err)
	}
	var errs []error
	for ino, p := range f.files {
		path, ok := paths[ino]
		if !ok {
			continue // removed: metadata is durable
		}
		if err := p.rollBack(path); err != nil {
			errs = append(errs, err)
		}
	}
	f.files = map[uint64]*pending{}
	return errors.Join(errs...)
}

func (p *pending) rollBack(path string) error {
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("lazyfs: roll back %s: %w", path, err)
	}
	defer file.Close()
	for i := len(p.undo) - 1; i >= 0; i-- {
		if _, err := file.WriteAt(p.undo[i].old, p.undo[i].off); err != nil {
			return fmt.Errorf("lazyfs: roll back %s: %w", path, err)
		}
	}
	if err := file.Truncate(p.synced); err != nil {
		return fmt.Errorf("lazyfs: roll back %s: %w", path, err)
	}
	return file.Sync()
}

// created starts the record of a new file: nothing of it is synced.
func (f *FS) created(ino uint64) {
	f.mu.Lock()
	f.files[ino] = &pending{}
	f.mu.Unlock()
}

// changing records what a write of n bytes at off (or a truncation to off,
// n < 0) of the file read through r is about to replace.
func (f *FS) changing(ino uint64, r *os.File, off int64, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.files[ino]
	if p == nil {
		// First change since the mount or the last sync: what is there
		// now is durable.
		st, err := r.Stat()
		if err != nil {
			return err
		}
		p = &pending{synced: st.Size()}
		f.files[ino] = p
	}
	end := off + int64(n)
	if n < 0 {
		end = p.synced // a truncation replaces everything after off
	}
	end = min(end, p.synced) // beyond the synced size the cut truncates anyway
	if off >= end {
		return nil
	}
	old := make([]byte, end-off)
	got, err := r.ReadAt(old, off)
	if err != nil && got < len(old) {
		old = old[:got] // the file is shorter now; the cut truncates or extends it
	}
	p.undo = append(p.undo, undo{off: off, old: old})
	return nil
}

// synced forgets a file's undo records: its content is durable.
func (f *FS) synced(ino uint64) {
	f.mu.Lock()
	delete(f.files, ino)
	f.mu.Unlock()
}
