package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/internal/lazyfs"
)

// The helper process: a server on the directory in $EMBEDDED_SYNC_DIR that
// stores synced messages, says so, stores unsynced ones, says so, and
// waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("EMBEDDED_SYNC_DIR"); dir != "" {
		if err := syncHelper(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		select {} // SIGKILLed by the test
	}
	os.Exit(m.Run())
}

const cutStream = "CUT"

func syncHelper(dir string) error {
	srv, err := Start(Config{StoreDir: dir, NoListen: true})
	if err != nil {
		return err
	}
	nc, err := srv.Connect()
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cutStream, Subjects: []string{"cut.>"}}); err != nil {
		return err
	}
	if err := srv.SyncAll(); err != nil {
		return err
	}
	publish := func(from, to int) error {
		for i := from; i < to; i++ {
			if _, err := js.Publish(ctx, "cut."+strconv.Itoa(i), []byte("message "+strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	}
	if err := publish(0, 50); err != nil {
		return err
	}
	if err := srv.Sync(ctx); err != nil {
		return err
	}
	fmt.Println("synced")
	if err := publish(50, 100); err != nil {
		return err
	}
	fmt.Println("unsynced")
	return nil
}

// TestSyncSurvivesPowerCut stores messages in a server process at the
// default sync interval, syncs after the first 50, SIGKILLs the process
// and cuts the power: the 50 synced messages are there, the unsynced ones
// are not all (so the cut bites), and the server starts on what is left.
func TestSyncSurvivesPowerCut(t *testing.T) {
	data := t.TempDir()
	fs, err := lazyfs.Mount(data, t.TempDir())
	if err != nil {
		t.Skipf("FUSE cannot mount here, so the power-cut test cannot run: %v", err)
	}
	t.Cleanup(func() { _ = fs.Unmount() })

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EMBEDDED_SYNC_DIR="+data)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok || strings.HasPrefix(l, "error") {
				_ = cmd.Process.Kill()
				t.Fatalf("helper process ended before its writes: %q", l)
			}
			done = l == "unsynced"
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatal("helper process did not store its messages in 30s")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}

	srv, err := Start(Config{StoreDir: data, NoListen: true})
	if err != nil {
		t.Fatalf("server does not start after the cut: %v", err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.Stream(ctx, cutStream)
	if err != nil {
		t.Fatalf("stream after the cut: %v", err)
	}
	for i := 0; i < 50; i++ {
		m, err := s.GetLastMsgForSubject(ctx, "cut."+strconv.Itoa(i))
		if err != nil {
			t.Fatalf("synced message %d lost in the cut: %v", i, err)
		}
		if want := "message " + strconv.Itoa(i); string(m.Data) != want {
			t.Fatalf("synced message %d is %q after the cut, want %q", i, m.Data, want)
		}
	}
	kept := 0
	for i := 50; i < 100; i++ {
		if _, err := s.GetLastMsgForSubject(ctx, "cut."+strconv.Itoa(i)); err == nil {
			kept++
		} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Fatal(err)
		}
	}
	if kept == 50 {
		t.Fatal("the cut kept all 50 unsynced messages: the test cannot tell a sync from none")
	}
	t.Logf("the cut kept 50 of 50 synced messages and %d of 50 unsynced", kept)
}

// TestSyncGroupsCallers runs many concurrent Syncs: each returns after a
// round that started after its call, and the rounds are fewer than the
// callers.
func TestSyncGroupsCallers(t *testing.T) {
	srv, err := Start(Config{StoreDir: t.TempDir(), NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "G", Subjects: []string{"g.>"}}); err != nil {
		t.Fatal(err)
	}
	const callers = 64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := js.Publish(ctx, "g."+strconv.Itoa(i), []byte("x")); err != nil {
				errs <- err
				return
			}
			before := srv.SyncRounds()
			if err := srv.Sync(ctx); err != nil {
				errs <- err
				return
			}
			if after := srv.SyncRounds(); after <= before {
				errs <- fmt.Errorf("Sync returned with rounds %d, as many as when it was called", after)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if r := srv.SyncRounds(); r == 0 || r > callers {
		t.Fatalf("%d rounds for %d callers", r, callers)
	}
	t.Logf("%d callers, %d rounds", callers, srv.SyncRounds())
}

// TestSyncFailureIsFinal: once an fsync fails, Sync and SyncAll return
// that error naming the file, and go on returning it after the disk
// recovers.
func TestSyncFailureIsFinal(t *testing.T) {
	data := t.TempDir()
	fs, err := lazyfs.Mount(data, t.TempDir())
	if err != nil {
		t.Skipf("FUSE cannot mount here, so the failing-disk test cannot run: %v", err)
	}
	t.Cleanup(func() { _ = fs.Unmount() })
	srv, err := Start(Config{StoreDir: data, NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "F", Subjects: []string{"f.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "f.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	fs.FailSync(syscall.EIO)
	err = srv.Sync(ctx)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), ".blk") {
		t.Fatalf("Sync on a failing disk: %v, want EIO naming the block file", err)
	}
	fs.FailSync(0)
	if _, err := js.Publish(ctx, "f.2", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err2 := srv.Sync(ctx); !errors.Is(err2, syscall.EIO) {
		t.Fatalf("Sync after the disk recovered: %v, want the first failure again", err2)
	}
	if err2 := srv.SyncAll(); !errors.Is(err2, syscall.EIO) {
		t.Fatalf("SyncAll after a failed Sync: %v, want the first failure", err2)
	}
}

// TestFailedNamesAFullDisk: a write the server cannot make (ENOSPC) is
// what Failed and Sync return from then on, room or not.
func TestFailedNamesAFullDisk(t *testing.T) {
	data := t.TempDir()
	fs, err := lazyfs.Mount(data, t.TempDir())
	if err != nil {
		t.Skipf("FUSE cannot mount here, so the full-disk test cannot run: %v", err)
	}
	t.Cleanup(func() { _ = fs.Unmount() })
	srv, err := Start(Config{StoreDir: data, NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "D", Subjects: []string{"d.>"}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Failed(); err != nil {
		t.Fatalf("Failed on a working disk: %v", err)
	}
	fs.FailWrite(syscall.ENOSPC)
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	_, perr := js.Publish(pctx, "d.1", []byte("x"))
	pcancel()
	if perr == nil {
		t.Fatal("a publish was acknowledged on a full disk")
	}
	fs.FailWrite(0)
	for _, err := range []error{srv.Failed(), srv.Sync(ctx)} {
		if err == nil || !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("after a write failed for want of room: %v, want the server's error naming it", err)
		}
	}
}
