package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// cutPlan is what the helper process stores: a stream of messages of size
// bytes, limited to maxBytes (which sets its block size), synced writes
// then unsynced ones.
type cutPlan struct {
	size, maxBytes     int
	synced, unsynced   int
	syncedPerRoundTrip bool // a Sync after every synced message, not once
}

var cutPlans = map[string]cutPlan{
	// A few small messages in one block.
	"simple": {size: 16, synced: 50, unsynced: 50},
	// 32 KB blocks (the least a stream gets): the synced messages fill
	// several, so rounds meet new blocks, synced one message at a time.
	"rollover": {size: 1000, maxBytes: 120_000, synced: 90, unsynced: 10, syncedPerRoundTrip: true},
}

func syncHelper(dir string) error {
	plan := cutPlans[os.Getenv("EMBEDDED_SYNC_PLAN")]
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
	limit := int64(-1) // none
	if plan.maxBytes > 0 {
		limit = int64(plan.maxBytes)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cutStream, Subjects: []string{"cut.>"}, MaxBytes: limit}); err != nil {
		return err
	}
	if err := srv.SyncAll(); err != nil {
		return err
	}
	publish := func(from, to int, sync bool) error {
		for i := from; i < to; i++ {
			if _, err := js.Publish(ctx, "cut."+strconv.Itoa(i), cutMessage(i, plan.size)); err != nil {
				return err
			}
			if sync {
				if err := srv.Sync(ctx); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := publish(0, plan.synced, plan.syncedPerRoundTrip); err != nil {
		return err
	}
	if err := srv.Sync(ctx); err != nil {
		return err
	}
	fmt.Println("synced")
	if err := publish(plan.synced, plan.synced+plan.unsynced, false); err != nil {
		return err
	}
	fmt.Println("unsynced")
	return nil
}

// cutMessage is message i, size bytes long.
func cutMessage(i, size int) []byte {
	m := []byte("message " + strconv.Itoa(i) + " ")
	for len(m) < size {
		m = append(m, 'x')
	}
	return m
}

// TestSyncSurvivesPowerCut stores messages in a server process at the
// default sync interval, syncs them, stores more without syncing,
// SIGKILLs the process and cuts the power: the synced messages are there,
// the unsynced ones are not all (so the cut bites), and the server starts
// on what is left. The rollover plan's synced messages fill several
// blocks.
func TestSyncSurvivesPowerCut(t *testing.T) {
	for _, name := range []string{"simple", "rollover"} {
		t.Run(name, func(t *testing.T) { powerCut(t, name) })
	}
}

func powerCut(t *testing.T, planName string) {
	plan := cutPlans[planName]
	data := t.TempDir()
	fs, err := lazyfs.Mount(data, t.TempDir())
	if err != nil {
		t.Skipf("FUSE cannot mount here, so the power-cut test cannot run: %v", err)
	}
	t.Cleanup(func() { _ = fs.Unmount() })

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EMBEDDED_SYNC_DIR="+data, "EMBEDDED_SYNC_PLAN="+planName)
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
	for i := 0; i < plan.synced; i++ {
		m, err := s.GetLastMsgForSubject(ctx, "cut."+strconv.Itoa(i))
		if err != nil {
			t.Fatalf("synced message %d lost in the cut: %v", i, err)
		}
		if want := cutMessage(i, plan.size); string(m.Data) != string(want) {
			t.Fatalf("synced message %d is %q after the cut, want %q", i, m.Data, want)
		}
	}
	kept := 0
	for i := plan.synced; i < plan.synced+plan.unsynced; i++ {
		if _, err := s.GetLastMsgForSubject(ctx, "cut."+strconv.Itoa(i)); err == nil {
			kept++
		} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Fatal(err)
		}
	}
	if kept == plan.unsynced {
		t.Fatalf("the cut kept all %d unsynced messages: the test cannot tell a sync from none", kept)
	}
	blocks, _ := filepath.Glob(filepath.Join(data, "jetstream", "*", "streams", cutStream, "msgs", "*.blk"))
	t.Logf("the cut kept %d of %d synced messages and %d of %d unsynced; %d blocks", plan.synced, plan.synced, kept, plan.unsynced, len(blocks))
	if planName == "rollover" && len(blocks) < 2 {
		t.Fatalf("%d message blocks: the plan was to fill several", len(blocks))
	}
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
	fs, srv, js, ctx := onLazyFS(t, "F", "f.>")
	if _, err := js.Publish(ctx, "f.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	fs.FailSync(syscall.EIO)
	err := srv.Sync(ctx)
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
	fs, srv, js, ctx := onLazyFS(t, "D", "d.>")
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

// onLazyFS starts a server on a lazyfs directory with a stream name taking
// subjects, for the failing-disk tests; it skips where FUSE cannot mount.
func onLazyFS(t *testing.T, name, subjects string) (*lazyfs.FS, *Server, jetstream.JetStream, context.Context) {
	t.Helper()
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
	t.Cleanup(srv.Shutdown) // before the unmount: cleanups run last first
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subjects}}); err != nil {
		t.Fatal(err)
	}
	return fs, srv, js, ctx
}
