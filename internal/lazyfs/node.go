package lazyfs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node whose files record their unsynced writes.
type node struct {
	*gofs.LoopbackNode
	fs *FS
}

// WrapChild makes every node below the root a node of this file system.
func (n *node) WrapChild(_ context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*gofs.LoopbackNode), fs: n.fs}
}

func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// Open wraps the loopback file; O_TRUNC counts as an unsynced change.
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	path := n.backingPath()
	r, err := os.Open(path)
	if err != nil {
		return nil, 0, gofs.ToErrno(err)
	}
	ino, errno := inode(r)
	if errno == 0 && flags&syscall.O_TRUNC != 0 {
		if err := n.fs.changing(ino, r, 0, -1); err != nil {
			errno = gofs.ToErrno(err)
		}
	}
	if errno != 0 {
		r.Close()
		return nil, 0, errno
	}
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		r.Close()
		return nil, 0, errno
	}
	return &file{LoopbackFile: fh.(*gofs.LoopbackFile), fs: n.fs, ino: ino, r: r}, fuseFlags, 0
}

// Create records a new file: none of its content is synced yet.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	r, err := os.Open(filepath.Join(n.backingPath(), name))
	if err != nil {
		_ = fh.(gofs.FileReleaser).Release(ctx)
		return nil, nil, 0, gofs.ToErrno(err)
	}
	ino, errno := inode(r)
	if errno != 0 {
		r.Close()
		_ = fh.(gofs.FileReleaser).Release(ctx)
		return nil, nil, 0, errno
	}
	n.fs.created(ino)
	return ch, &file{LoopbackFile: fh.(*gofs.LoopbackFile), fs: n.fs, ino: ino, r: r}, fuseFlags, 0
}

// Setattr records a truncation made by path (without an open file).
func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok && fh == nil {
		r, err := os.Open(n.backingPath())
		if err != nil {
			return gofs.ToErrno(err)
		}
		defer r.Close()
		ino, errno := inode(r)
		if errno != 0 {
			return errno
		}
		if err := n.fs.changing(ino, r, int64(size), -1); err != nil {
			return gofs.ToErrno(err)
		}
	}
	return n.LoopbackNode.Setattr(ctx, fh, in, out)
}

func inode(r *os.File) (uint64, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(r.Fd()), &st); err != nil {
		return 0, gofs.ToErrno(err)
	}
	return st.Ino, 0
}

// file is a loopback file that records what each write replaces and
// forgets it at fsync; r reads the content a write is about to replace.
type file struct {
	*gofs.LoopbackFile
	fs  *FS
	ino uint64
	r   *os.File
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.fs.writeFailure(); errno != 0 {
		return 0, errno
	}
	if err := f.fs.changing(f.ino, f.r, off, len(data)); err != nil {
		return 0, gofs.ToErrno(err)
	}
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	n := 0
	for _, d := range data {
		n += len(d)
	}
	if errno := f.fs.writeFailure(); errno != 0 {
		return 0, errno
	}
	if err := f.fs.changing(f.ino, f.r, off, n); err != nil {
		return 0, gofs.ToErrno(err)
	}
	return f.LoopbackFile.Writev(ctx, data, off)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if err := f.fs.changing(f.ino, f.r, int64(size), -1); err != nil {
			return gofs.ToErrno(err)
		}
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if errno := f.fs.syncFailure(); errno != 0 {
		return errno
	}
	errno := f.LoopbackFile.Fsync(ctx, flags)
	if errno == 0 {
		f.fs.synced(f.ino)
	}
	return errno
}

// PassthroughFd declines kernel passthrough: writes must reach Write.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

func (f *file) Release(ctx context.Context) syscall.Errno {
	f.r.Close()
	return f.LoopbackFile.Release(ctx)
}
