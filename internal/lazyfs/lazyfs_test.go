package lazyfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// mount mounts a fresh backing directory, or skips the test saying why
// FUSE cannot mount here.
func mount(t *testing.T) (*FS, string) {
	t.Helper()
	dir, backing := t.TempDir(), t.TempDir()
	f, err := Mount(dir, backing)
	if err != nil {
		t.Skipf("FUSE cannot mount here, so the power-cut harness cannot run: %v", err)
	}
	t.Cleanup(func() { _ = f.Unmount() })
	return f, dir
}

func write(t *testing.T, path string, flag int, data []byte, off int64, sync bool) {
	t.Helper()
	file, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := file.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func content(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A cut keeps what was fsynced and drops every write after it: an
// overwrite inside the synced content, an append, a file never synced
// (it stays, empty), a truncation; a file synced last stays whole.
func TestCutDropsWhatWasNotSynced(t *testing.T) {
	f, dir := mount(t)
	a, b, c, d := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c"), filepath.Join(dir, "d")
	write(t, a, os.O_CREATE|os.O_RDWR, []byte("0123456789"), 0, true)
	write(t, a, os.O_RDWR, []byte("XY"), 3, false)    // overwrite
	write(t, a, os.O_RDWR, []byte("tail"), 10, false) // append
	write(t, b, os.O_CREATE|os.O_RDWR, []byte("lost"), 0, false)
	write(t, c, os.O_CREATE|os.O_RDWR, []byte("keep me"), 0, true)
	if err := os.Truncate(c, 2); err != nil {
		t.Fatal(err)
	}
	write(t, d, os.O_CREATE|os.O_RDWR, []byte("first"), 0, false)
	write(t, d, os.O_RDWR, []byte("FIRST, synced"), 0, true)
	if got := content(t, a); string(got) != "012XY56789tail" {
		t.Fatalf("before the cut a = %q", got)
	}

	if err := f.Cut(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{a: "0123456789", b: "", c: "keep me", d: "FIRST, synced"} {
		if got := content(t, path); !bytes.Equal(got, []byte(want)) {
			t.Errorf("after the cut %s = %q, want %q", filepath.Base(path), got, want)
		}
	}
	// The file system goes on after a cut: a write synced now survives
	// the next one.
	write(t, a, os.O_RDWR, []byte("!"), 0, true)
	write(t, a, os.O_RDWR, []byte("?"), 1, false)
	if err := f.Cut(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, a); string(got) != "!123456789" {
		t.Errorf("after the second cut a = %q", got)
	}
}

// A rename is durable; the renamed file's unsynced content is not.
func TestCutKeepsRenames(t *testing.T) {
	f, dir := mount(t)
	tmp, final := filepath.Join(dir, "x.tmp"), filepath.Join(dir, "x")
	write(t, tmp, os.O_CREATE|os.O_RDWR, []byte("synced"), 0, true)
	write(t, tmp, os.O_RDWR, []byte("!"), 6, false)
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	if err := f.Cut(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, final); string(got) != "synced" {
		t.Fatalf("renamed file after the cut: %q", got)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the old name is back: %v", err)
	}
}

// A failing fsync reports the error and syncs nothing: the cut drops the
// write it was meant to keep.
func TestFailSync(t *testing.T) {
	f, dir := mount(t)
	a := filepath.Join(dir, "a")
	write(t, a, os.O_CREATE|os.O_RDWR, []byte("kept"), 0, true)
	f.FailSync(syscall.EIO)
	file, err := os.OpenFile(a, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteAt([]byte("gone"), 0); err != nil {
		t.Fatal(err)
	}
	if err := file.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync = %v, want EIO", err)
	}
	file.Close()
	f.FailSync(0)
	if err := f.Cut(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, a); string(got) != "kept" {
		t.Fatalf("after a failed fsync and a cut a = %q, want %q", got, "kept")
	}
}

// A failing write reports the error and changes nothing; writes work again
// once the failure is lifted.
func TestFailWrite(t *testing.T) {
	f, dir := mount(t)
	a := filepath.Join(dir, "a")
	write(t, a, os.O_CREATE|os.O_RDWR, []byte("kept"), 0, true)
	f.FailWrite(syscall.ENOSPC)
	file, err := os.OpenFile(a, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteAt([]byte("lost"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk = %v, want ENOSPC", err)
	}
	if got := content(t, a); string(got) != "kept" {
		t.Fatalf("after a failed write a = %q, want %q", got, "kept")
	}
	f.FailWrite(0)
	if _, err := file.WriteAt([]byte("new!"), 0); err != nil {
		t.Fatal(err)
	}
	if got := content(t, a); string(got) != "new!" {
		t.Fatalf("after the disk has room again a = %q, want %q", got, "new!")
	}
}
