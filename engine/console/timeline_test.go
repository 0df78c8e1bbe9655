package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/console"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/httpapi"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
)

// timelineAnswer is GET /console/instances/{id}/timeline's answer.
type timelineAnswer struct {
	Facts []struct {
		Subject string          `json:"subject"`
		Seq     uint64          `json:"seq"`
		Fact    json.RawMessage `json:"fact"`
	} `json:"facts"`
	Truncated bool   `json:"truncated"`
	From      string `json:"from"`
}

func (a timelineAnswer) subjects() string {
	var s []string
	for _, f := range a.Facts {
		s = append(s, strings.TrimPrefix(f.Subject, "jetbpm.fact."))
	}
	return strings.Join(s, " ")
}

// otherConsole is a second console on f's engine, with the API, for
// comparing answers.
func (f *fixture) otherConsole(t *testing.T, opts ...console.Option) (*console.Handler, http.Handler) {
	t.Helper()
	c, err := console.New(f.eng, f.env.Conn, append([]console.Option{console.WithLogger(enginetest.QuietLog)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	srv := httpapi.New(nil)
	srv.SetEngine(f.eng)
	srv.Handle("/", c)
	return c, srv
}

func timelineOf(t *testing.T, h http.Handler, id string) timelineAnswer {
	t.Helper()
	rec := get(t, h, "/console/instances/"+id+"/timeline")
	var a timelineAnswer
	if rec.Code != 200 {
		t.Fatalf("timeline of %s: %d %s", id, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTimelineFromTheIndex: the timeline of an instance with instance,
// incident and task facts, among other instances' facts, read by the fact
// index is the replay's answer. The replay's answer comes from a console
// whose index holds one sequence: the instance's entry is dropped at its
// second fact, so it replays. A console started after the facts reads the
// stream from its first fact; one whose start-up window (two facts)
// misses the instance's start replays too.
func TestTimelineFromTheIndex(t *testing.T) {
	f := newFixture(t)
	_, tiny := f.otherConsole(t, console.WithFactIndexCap(1))
	v := f.start(t, "a1") // an incident
	f.start(t, "a2")      // another incident
	f.failCharge.Store(false)
	if err := f.eng.RetryIncident(tctx(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	f.start(t, "a3") // a task
	if _, err := f.eng.WaitUntil(tctx(t), "a1", func(v *engine.InstanceView) bool {
		return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "approve"
	}); err != nil {
		t.Fatal(err)
	}
	want := "instance.charge.started incident.charge.raised incident.charge.retried incident.charge.resolved task.charge.created"
	var indexed, scanned timelineAnswer
	testwait.Until(t, 10*time.Second, "a1's timeline, indexed and replayed", func() error {
		indexed, scanned = timelineOf(t, f.open, "a1"), timelineOf(t, tiny, "a1")
		if got := indexed.subjects(); !strings.HasPrefix(got, want) {
			return fmt.Errorf("indexed: %s, want %s…", got, want)
		}
		if !slices.EqualFunc(indexed.Facts, scanned.Facts, func(a, b struct {
			Subject string          `json:"subject"`
			Seq     uint64          `json:"seq"`
			Fact    json.RawMessage `json:"fact"`
		}) bool {
			return a.Subject == b.Subject && a.Seq == b.Seq && string(a.Fact) == string(b.Fact)
		}) {
			return fmt.Errorf("indexed %s\nreplayed %s", indexed.subjects(), scanned.subjects())
		}
		return nil
	})
	if indexed.From != "index" || scanned.From != "scan" || indexed.Truncated || scanned.Truncated {
		t.Fatalf("from %q / %q, truncated %v / %v", indexed.From, scanned.From, indexed.Truncated, scanned.Truncated)
	}
	for _, x := range indexed.Facts {
		var fact struct {
			Instance string `json:"instanceId"`
		}
		if err := json.Unmarshal(x.Fact, &fact); err != nil || fact.Instance != "a1" {
			t.Fatalf("a1's timeline has %s", x.Fact)
		}
	}

	_, late := f.otherConsole(t)
	if got := timelineOf(t, late, "a1"); got.From != "index" || got.subjects() != indexed.subjects() {
		t.Fatalf("a console started after the facts: from %s, %s", got.From, got.subjects())
	}
	_, narrow := f.otherConsole(t, console.WithFactIndexCap(2))
	if got := timelineOf(t, narrow, "a1"); got.From != "scan" || got.subjects() != indexed.subjects() {
		t.Fatalf("a console whose window misses a1's start: from %s, %s", got.From, got.subjects())
	}
	if got := timelineOf(t, f.open, "a3"); got.From != "index" || !strings.HasPrefix(got.subjects(), "instance.charge.started task.charge.created") {
		t.Fatalf("a3: from %s, %s", got.From, got.subjects())
	}
}

// TestFactIndexBound: the index holds at most its cap of sequences,
// dropping the instances that started first, and those then replay.
func TestFactIndexBound(t *testing.T) {
	f := newFixture(t)
	f.failCharge.Store(false)
	const limit = 5
	c, h := f.otherConsole(t, console.WithFactIndexCap(limit))
	for i := range 6 {
		f.start(t, fmt.Sprintf("b%d", i))
	}
	js, err := jetstream.New(f.env.Conn)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(tctx(t), streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	total := stream.CachedInfo().State.Msgs
	// b5's timeline waits for the index to have read every fact.
	last := timelineOf(t, h, "b5")
	held, entries := c.FactIndexSize()
	if held > limit || held == 0 || entries == 0 || total <= limit {
		t.Fatalf("the index holds %d sequences of %d instances (cap %d, %d facts stored)", held, entries, limit, total)
	}
	if last.From != "index" {
		t.Fatalf("b5, the newest: from %s", last.From)
	}
	if got := timelineOf(t, h, "b0"); got.From != "scan" || !strings.HasPrefix(got.subjects(), "instance.charge.started task.charge.created") {
		t.Fatalf("b0, dropped: from %s, %s", got.From, got.subjects())
	}
}

// TestHistoryLevelSaysWhatIsNotRecorded: at history level incidents the
// timeline holds the incident facts only and says which families are not
// recorded; the overview says so too, and its counts still follow the
// instances (no instance fact comes to say they moved).
func TestHistoryLevelSaysWhatIsNotRecorded(t *testing.T) {
	f := newFixtureWith(t, engine.Options{History: history.Incidents})
	f.start(t, "h1") // raises an incident
	var tl struct {
		timelineAnswer
		History     string   `json:"history"`
		NotRecorded []string `json:"notRecorded"`
	}
	testwait.Until(t, 10*time.Second, "h1's timeline", func() error {
		tl.Facts = nil
		if err := json.Unmarshal(get(t, f.open, "/console/instances/h1/timeline").Body.Bytes(), &tl); err != nil {
			return err
		}
		if got := tl.subjects(); got != "incident.charge.raised" {
			return fmt.Errorf("timeline %q, want the raised incident only", got)
		}
		return nil
	})
	if tl.History != "incidents" || !slices.Equal(tl.NotRecorded, []string{"instance", "task", "message"}) {
		t.Fatalf("timeline says history %q, not recorded %v", tl.History, tl.NotRecorded)
	}
	var ov struct {
		History     string   `json:"history"`
		NotRecorded []string `json:"notRecorded"`
		Totals      struct {
			Instances map[string]int `json:"instances"`
		} `json:"totals"`
	}
	testwait.Until(t, 10*time.Second, "the overview counts h1", func() error {
		if err := json.Unmarshal(get(t, f.open, "/console/overview").Body.Bytes(), &ov); err != nil {
			return err
		}
		if ov.Totals.Instances["incident"] != 1 {
			return fmt.Errorf("counts %v", ov.Totals.Instances)
		}
		return nil
	})
	if ov.History != "incidents" || !slices.Equal(ov.NotRecorded, []string{"instance", "task", "message"}) {
		t.Fatalf("overview says history %q, not recorded %v", ov.History, ov.NotRecorded)
	}
	// A full console says nothing is left out.
	full := newFixture(t)
	full.start(t, "h2")
	if err := json.Unmarshal(get(t, full.open, "/console/instances/h2/timeline").Body.Bytes(), &tl); err != nil {
		t.Fatal(err)
	}
	if tl.History != "full" || tl.NotRecorded == nil || len(tl.NotRecorded) != 0 {
		t.Fatalf("full timeline says history %q, not recorded %v", tl.History, tl.NotRecorded)
	}
}
