package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// Jobs and timer schedules of living instances that the store lost, in a
// stopped engine's store (#37): a block of the job queue or of the events
// stream (which holds the timer schedules) cut short, as a torn write
// does, or five bits flipped in it. A cut leaves the server's last
// sequence where it was; flipped bits take it back (a gap the marks see)
// while its listing of subjects still names what it dropped. Either way
// the check finds each wait whose job or schedule is gone, puts it back
// and records it; every instance then completes, or waits on its timer
// again, due when it was.
func TestLostJobsAndTimersArePutBack(t *testing.T) {
	for _, c := range []struct {
		stream string
		flip   bool
	}{{streams.JobsStream, false}, {streams.EventsStream, false}, {streams.JobsStream, true}, {streams.EventsStream, true}} {
		name := map[bool]string{false: "cut/", true: "flip/"}[c.flip] + c.stream
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lostWaits(t, c.stream, c.flip)
		})
	}
}

func lostWaits(t *testing.T, stream string, flip bool) {
	env := streamstest.Start(t)
	opts := withSync(env, engine.Options{MarksFile: t.TempDir() + "/jetbpm-marks"})
	eng := enginetest.Open(t, env.Conn, opts)
	cuts, naps := cutsAndNaps(t, env, eng)
	// What each instance waits on outside its checkpoint, by subject.
	subjects, due := map[string]string{}, map[string]string{}
	for _, id := range append(slices.Clone(cuts), naps...) {
		subjects[id] = waitSubject(t, env, eng, id)
	}
	subject := func(id string) string { return subjects[id] }
	for _, id := range naps {
		due[id] = schedule(t, env, subject(id))
	}
	before := streamState(t, env, stream)
	if err := eng.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}
	env.RestartWith(t, func(dir string) {
		if flip {
			blocks := streamBlocks(t, dir, stream)
			flipBits(t, blocks[len(blocks)-1], 0.3, 0.45, 0.6, 0.75, 0.9)
		} else {
			truncateLastBlock(t, dir, stream)
		}
	})
	var gone []string
	for _, id := range append(slices.Clone(cuts), naps...) {
		if !held(t, env, subject(id)) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		t.Fatalf("the damage to %s lost nothing: the test proves nothing", stream)
	}
	t.Logf("%s: %d jobs or timers gone: %v", stream, len(gone), gone)
	if after := streamState(t, env, stream); after == before {
		// The server trusted its index and still counts every message,
		// though some cannot be read (bits flipped inside records it has
		// not read since): nothing the check reads without reading every
		// job and schedule shows the loss (docs/reliability.md).
		t.Skipf("nats-server still counts all %d messages of %s although %v cannot be read: a loss the store check does not see (documented)",
			after[0], stream, gone)
	}

	// The check runs at start-up; a wait is looked at once it is older
	// than a step's publishing can take, so the clock is a little ahead.
	opts.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	eng = enginetest.Open(t, env.Conn, opts)
	recs, err := eng.LostRecords(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	var named, gaps []string
	for _, r := range recs {
		switch r.Kind {
		case lost.Wait:
			if r.Status != lost.Rearmed {
				t.Errorf("record %s: %s, want %s", r.Key(), r.Status, lost.Rearmed)
			}
			named = append(named, r.Instance)
		case lost.Stream:
			gaps = append(gaps, r.Gap.Stream)
		default:
			t.Errorf("record %+v: nothing but jobs and timers was lost", r)
		}
	}
	slices.Sort(named)
	if !slices.Equal(named, gone) {
		t.Fatalf("records name %v, the damage took the jobs or timers of %v", named, gone)
	}
	if flip && !slices.Equal(gaps, []string{stream}) || !flip && len(gaps) > 0 {
		t.Errorf("gaps recorded %v (flipped bits: %v)", gaps, flip)
	}

	ran := cutWorker(t, env)
	for i, id := range cuts {
		v := waitDone(t, eng, id)
		if v.Status != instance.Completed || fmt.Sprint(v.Variables["charged"]) != fmt.Sprint(i) {
			t.Errorf("%s: %s, variables %v", id, v.Status, v.Variables)
		}
	}
	for _, id := range cuts {
		if n := ran(id); n != 1 {
			t.Errorf("%s: its job ran %d times, want once", id, n)
		}
	}
	for _, id := range naps {
		testwait.Until(t, 10*time.Second, "the timer of "+id+" scheduled", func() error {
			if got := schedule(t, env, subject(id)); got != due[id] {
				return fmt.Errorf("schedule %q, want %q", got, due[id])
			}
			return nil
		})
	}
}

// waitSubject returns the subject of the job or timer schedule the only
// wait of instance id's checkpoint waits on.
func waitSubject(t *testing.T, env *streamstest.Env, eng *engine.Engine, id string) string {
	t.Helper()
	m := storedCheckpoint(t, env.JS, id)
	if m == nil {
		t.Fatalf("instance %s has no checkpoint", id)
	}
	var s instance.State
	if err := streams.Unmarshal(m.Data, &s); err != nil || len(s.Waits) != 1 {
		t.Fatalf("checkpoint of %s: %v, waits %d", id, err, len(s.Waits))
	}
	if w := s.Waits[0]; w.Job != nil {
		return streams.JobSubject(w.Job.Topic, w.ID)
	}
	return streams.TimerSubject(eng.PartitionOf(id), id, s.Waits[0].ID)
}

// held reports whether the jobs or events stream holds a message on
// subject.
func held(t *testing.T, env *streamstest.Env, subject string) bool {
	t.Helper()
	return lastOn(t, env, subject) != nil
}

// schedule returns the schedule of the timer on subject, "" if none.
func schedule(t *testing.T, env *streamstest.Env, subject string) string {
	t.Helper()
	if m := lastOn(t, env, subject); m != nil {
		return m.Header.Get("Nats-Schedule")
	}
	return ""
}

// lastOn returns the last message on subject in the jobs or events
// stream, nil if none. It reads every message by its sequence: after
// flipped bits, nats-server 2.15's index of subjects can miss a message
// stored since (GetLastMsgForSubject does not find it).
func lastOn(t *testing.T, env *streamstest.Env, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	name := streams.EventsStream
	if strings.HasPrefix(subject, "jetbpm.job.") {
		name = streams.JobsStream
	}
	s, err := env.JS.Stream(bounded(t), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	var last *jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(bounded(t), seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject == subject {
			last = m
		}
	}
	return last
}

// streamState returns what the server says of stream: its message count,
// last sequence and deleted count.
func streamState(t *testing.T, env *streamstest.Env, stream string) [3]uint64 {
	t.Helper()
	st, err := env.JS.Stream(bounded(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	return [3]uint64{info.State.Msgs, info.State.LastSeq, uint64(info.State.NumDeleted)}
}
