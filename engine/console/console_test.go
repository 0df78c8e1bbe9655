package console_test

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/console"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

//go:embed testdata/charge.bpmn
var chargeXML string

// fixture is an engine on a real embedded JetStream with the charge
// process deployed: charge-card fails while failCharge is set.
type fixture struct {
	env        *streamstest.Env
	eng        *engine.Engine
	console    *console.Handler
	open       http.Handler // the console and /v1 behind open authentication
	failCharge atomic.Bool
}

func newFixture(t testing.TB, opts ...console.Option) *fixture {
	t.Helper()
	return newFixtureWith(t, engine.Options{}, opts...)
}

// newFixtureWith is newFixture with the engine's options eo (its
// operations are the fixture's).
func newFixtureWith(t testing.TB, eo engine.Options, opts ...console.Option) *fixture {
	t.Helper()
	f := &fixture{env: streamstest.Start(t)}
	f.failCharge.Store(true)
	ops := &engine.Operations{}
	ops.Register("charge", func(ctx context.Context, in map[string]any) (map[string]any, error) {
		if f.failCharge.Load() || in["fail"] == true {
			return nil, errors.New("card declined by the issuer")
		}
		return map[string]any{"charged": true}, nil
	})
	eo.Operations = ops
	f.eng = enginetest.Open(t, f.env.Conn, eo)
	if _, err := f.eng.DeployXML(tctx(t), strings.NewReader(chargeXML)); err != nil {
		t.Fatal(err)
	}
	c, err := console.New(f.eng, f.env.Conn, append([]console.Option{console.WithRefresh(50 * time.Millisecond), console.WithLogger(enginetest.QuietLog)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.console = c
	f.open = f.listener(nil)
	return f
}

// start starts an instance of charge and waits until it has an incident
// (failing) or a task (not failing).
func (f *fixture) start(t testing.TB, id string) *engine.InstanceView {
	t.Helper()
	if _, err := f.eng.Start(tctx(t), "charge", map[string]any{"amount": 42}, engine.InstanceID(id)); err != nil {
		t.Fatal(err)
	}
	v, err := f.eng.WaitUntil(tctx(t), id, func(v *engine.InstanceView) bool {
		return len(v.Incidents) > 0 || len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "approve"
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func get(t testing.TB, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

func TestPagesAndAssets(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/", "/processes/charge", "/instances", "/instances/x1", "/incidents", "/tasks"} {
		rec := get(t, f.open, path)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `<main id="main"`) {
			t.Errorf("GET %s: %d, want the shell", path, rec.Code)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
	}
	for path, ctype := range map[string]string{
		"/console/assets/app.js":                        "text/javascript",
		"/console/assets/pages/tasks.js":                "text/javascript",
		"/console/assets/style.css":                     "text/css",
		"/console/vendor/bpmn-viewer.production.min.js": "text/javascript",
	} {
		rec := get(t, f.open, path)
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), ctype) {
			t.Errorf("GET %s: %d %q, want 200 %s", path, rec.Code, rec.Header().Get("Content-Type"), ctype)
		}
	}
	for _, path := range []string{"/nope", "/console/assets/", "/console/assets/pages/", "/console/assets/missing.js", "/instances/a/b",
		"/console/assets/index.html", "/console/static/", "/console/static/0123456789abcdef/assets/app.js"} {
		if rec := get(t, f.open, path); rec.Code != 404 {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
}

// The shell names the build's asset prefix; files under it are cached
// for good, the unprefixed ones revalidate with their ETag. The viewer is
// preloaded by the diagram pages only.
func TestAssetCaching(t *testing.T) {
	f := newFixture(t)
	shell := get(t, f.open, "/").Body.String()
	m := regexp.MustCompile(`src="(/console/static/[0-9a-f]{16})/assets/app.js"`).FindStringSubmatch(shell)
	if m == nil {
		t.Fatalf("the shell names no prefixed app.js:\n%s", shell)
	}
	prefix := m[1]
	if strings.Contains(shell, "bpmn-viewer") || strings.Contains(shell, "diagram-js.css") {
		t.Errorf("the overview's shell loads the viewer:\n%s", shell)
	}
	if !strings.Contains(shell, `<link rel="modulepreload" href="`+prefix+`/assets/pages/overview.js">`) {
		t.Errorf("the overview's shell does not preload its page module:\n%s", shell)
	}
	for _, path := range []string{"/processes/charge", "/instances/x1"} {
		if s := get(t, f.open, path).Body.String(); !strings.Contains(s, `<link rel="preload" as="script" href="`+prefix+`/vendor/bpmn-viewer.production.min.js">`) ||
			!strings.Contains(s, `<link rel="modulepreload" href="`+prefix+`/assets/diagram.js">`) {
			t.Errorf("%s: the shell does not preload the viewer and diagram.js:\n%s", path, s)
		}
	}
	for _, path := range []string{"/assets/app.js", "/assets/pages/incidents.js", "/assets/style.css", "/vendor/bpmn-viewer.production.min.js", "/vendor/bpmn-js.css"} {
		rec := get(t, f.open, prefix+path)
		if rec.Code != 200 || rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || rec.Header().Get("ETag") == "" {
			t.Errorf("GET %s%s: %d, Cache-Control %q, ETag %q; want 200, immutable, an ETag", prefix, path, rec.Code, rec.Header().Get("Cache-Control"), rec.Header().Get("ETag"))
		}
		plain := get(t, f.open, "/console"+path)
		if plain.Code != 200 || plain.Header().Get("Cache-Control") != "no-cache" || plain.Header().Get("ETag") != rec.Header().Get("ETag") ||
			plain.Body.String() != rec.Body.String() {
			t.Errorf("GET /console%s: %d, Cache-Control %q, ETag %q; want the same file, no-cache, ETag %q", path, plain.Code, plain.Header().Get("Cache-Control"), plain.Header().Get("ETag"), rec.Header().Get("ETag"))
		}
		req := httptest.NewRequest("GET", "/console"+path, nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		again := httptest.NewRecorder()
		f.open.ServeHTTP(again, req)
		if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("GET /console%s with its ETag: %d, %d bytes; want 304, empty", path, again.Code, again.Body.Len())
		}
	}
}

// sse reads Server-Sent Events from a response body.
type sse struct{ r *bufio.Reader }

// next returns the next event's name and data (comments skipped).
func (s sse) next(t testing.TB) (event, data string) {
	t.Helper()
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("event feed: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && event != "":
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

func bufioReader(res *http.Response) *bufio.Reader { return bufio.NewReader(res.Body) }

func openFeed(t testing.TB, url string) sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/console/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("event feed: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := sse{bufio.NewReader(res.Body)}
	if ev, _ := s.next(t); ev != "ready" {
		t.Fatalf("first event %q, want ready", ev)
	}
	return s
}

// The feed delivers the facts stored after it opened, in order: the
// instance's start, its incident, and the incident's resolution.
func TestEventFeedStreamsNewFacts(t *testing.T) {
	f := newFixture(t)
	f.start(t, "before") // its facts are stored before the feed opens
	// The incident's fact is published just after the step that shows the
	// incident: wait until it is stored.
	js, err := jetstream.New(f.env.Conn)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the incident fact of before stored", func() error {
		st, err := js.Stream(tctx(t), streams.FactsStream)
		if err != nil {
			return err
		}
		info, err := st.Info(tctx(t), jetstream.WithSubjectFilter("jetbpm.fact.incident.>"))
		if err != nil {
			return err
		}
		if len(info.State.Subjects) == 0 {
			return fmt.Errorf("no incident fact yet")
		}
		return nil
	})
	srv := httptest.NewServer(f.open)
	t.Cleanup(srv.Close)
	feed := openFeed(t, srv.URL)

	v := f.start(t, "c1")
	if err := f.eng.ResolveIncident(tctx(t), v.Incidents[0].ID, map[string]any{"fixed": true}); err != nil {
		t.Fatal(err)
	}
	type fact struct {
		Subject string `json:"subject"`
		Seq     uint64 `json:"seq"`
		Fact    struct {
			Instance string `json:"instanceId"`
			Kind     string `json:"kind"`
		} `json:"fact"`
	}
	var got []string
	var last uint64
	for len(got) < 3 {
		ev, data := feed.next(t)
		if ev != "fact" {
			t.Fatalf("event %q, want fact", ev)
		}
		var x fact
		if err := json.Unmarshal([]byte(data), &x); err != nil {
			t.Fatalf("fact %s: %v", data, err)
		}
		if x.Seq <= last {
			t.Fatalf("seq %d after %d: out of order", x.Seq, last)
		}
		last = x.Seq
		if x.Fact.Instance != "c1" {
			t.Fatalf("fact about %q (%s), want only c1's: the feed replayed old facts", x.Fact.Instance, data)
		}
		got = append(got, x.Subject)
	}
	want := []string{"jetbpm.fact.instance.charge.started", "jetbpm.fact.incident.charge.raised", "jetbpm.fact.incident.charge.resolved"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("facts %v, want %v", got, want)
	}
}

func TestEventFeedHeartbeat(t *testing.T) {
	f := newFixture(t, console.WithHeartbeat(20*time.Millisecond))
	srv := httptest.NewServer(f.open)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/console/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	for beats := 0; beats < 2; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("waiting for two heartbeats: %v", err)
		}
		if line == ": heartbeat\n" {
			beats++
		}
	}
}

func TestOverviewCounts(t *testing.T) {
	f := newFixture(t)
	f.start(t, "i1")
	f.start(t, "i2")
	f.failCharge.Store(false)
	f.start(t, "t1")
	if err := f.eng.Cancel(tctx(t), "i2", "test"); err != nil {
		t.Fatal(err)
	}
	type counts struct {
		Processes []struct {
			ID            string         `json:"id"`
			Version       int            `json:"version"`
			Instances     map[string]int `json:"instances"`
			OpenIncidents int            `json:"openIncidents"`
			OpenTasks     int            `json:"openTasks"`
		} `json:"processes"`
	}
	want := `{"id":"charge","version":1,"instances":{"active":2,"completed":0,"failed":0,"incident":1,"terminated":1},"openIncidents":1,"openTasks":1}`
	testwait.Until(t, 10*time.Second, "the overview's counts", func() error {
		var c counts
		if err := json.Unmarshal(get(t, f.open, "/console/overview").Body.Bytes(), &c); err != nil {
			return err
		}
		if len(c.Processes) != 1 {
			return errors.New("processes: " + get(t, f.open, "/console/overview").Body.String())
		}
		b, _ := json.Marshal(c.Processes[0])
		if string(b) != want {
			return errors.New(string(b))
		}
		return nil
	})
	nodes := get(t, f.open, "/console/processes/charge/nodes?version=1").Body.String()
	if !strings.Contains(nodes, `"charge-card":{"active":1,"incidents":1}`) || !strings.Contains(nodes, `"approve":{"active":1,"incidents":0}`) {
		t.Fatalf("node counts %s", nodes)
	}
	if rec := get(t, f.open, "/console/processes/charge/nodes?version=x"); rec.Code != 400 || !strings.Contains(rec.Body.String(), `version \"x\"`) {
		t.Fatalf("bad version: %d %s", rec.Code, rec.Body)
	}
}

func TestTimeline(t *testing.T) {
	f := newFixture(t)
	v := f.start(t, "a1")
	f.start(t, "a2") // another instance's facts stay out
	if err := f.eng.RetryIncident(tctx(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	var tl struct {
		Facts []struct {
			Subject string `json:"subject"`
			Fact    struct {
				Instance string `json:"instanceId"`
			} `json:"fact"`
		} `json:"facts"`
	}
	testwait.Until(t, 10*time.Second, "a1's timeline", func() error {
		if err := json.Unmarshal(get(t, f.open, "/console/instances/a1/timeline").Body.Bytes(), &tl); err != nil {
			return err
		}
		var subjects []string
		for _, x := range tl.Facts {
			if x.Fact.Instance != "a1" {
				t.Fatalf("timeline of a1 has a fact of %s", x.Fact.Instance)
			}
			subjects = append(subjects, x.Subject)
		}
		// started, raised, retried, then whatever the failing retry adds
		if len(subjects) < 3 || subjects[0] != "jetbpm.fact.instance.charge.started" || subjects[1] != "jetbpm.fact.incident.charge.raised" || subjects[2] != "jetbpm.fact.incident.charge.retried" {
			return errors.New(strings.Join(subjects, " "))
		}
		return nil
	})
	if rec := get(t, f.open, "/console/instances/nope/timeline"); rec.Code != 404 {
		t.Fatalf("unknown instance: %d", rec.Code)
	}
}
