package console_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/console"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// TestConsoleLoad measures how long the pages take in Chromium with 10,000
// instances, 1,000 of them with an incident (the other 9,000 wait at a
// user task). A measurement, not an assertion: JETBPM_CONSOLE_LOAD=1 runs
// it and it logs the times (docs/console.md §6 has a run's numbers).
func TestConsoleLoad(t *testing.T) {
	if os.Getenv("JETBPM_CONSOLE_LOAD") == "" {
		t.Skip("a measurement: JETBPM_CONSOLE_LOAD=1 runs it")
	}
	f := newFixture(t)
	f.failCharge.Store(false)
	const total, failing = 10000, 1000
	begin := time.Now()
	ids := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range ids {
				vars := map[string]any{"amount": i, "fail": i%(total/failing) == 0}
				if _, err := f.eng.Start(context.Background(), "charge", vars, engine.InstanceID(fmt.Sprintf("load-%05d", i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range total {
		ids <- i
	}
	close(ids)
	wg.Wait()
	t.Logf("started %d instances in %s", total, time.Since(begin).Round(time.Millisecond))
	testwait.True(t, 10*time.Minute, "every instance at its task or incident", func() bool {
		l, err := f.eng.Tasks(tctx(t), engine.TaskFilter{})
		return err == nil && len(l) == total-failing
	})
	testwait.Until(t, 5*time.Minute, "the overview's counts", func() error {
		rec := get(t, f.open, "/console/overview")
		if want := fmt.Sprintf(`"openIncidents":%d,"openTasks":%d`, failing, total-failing); !strings.Contains(rec.Body.String(), want) {
			return fmt.Errorf("%.300s", rec.Body)
		}
		return nil
	})
	t.Logf("all %d instances settled after %s; the overview counts: %s", total, time.Since(begin).Round(time.Millisecond), took(get(t, f.open, "/console/overview").Body.String()))

	for _, path := range []string{"/console/overview", "/v1/instances?limit=100", "/v1/incidents?state=open", "/v1/tasks?state=open&limit=200", "/console/processes/charge/nodes?version=1", "/console/instances/load-00000/timeline"} {
		start := time.Now()
		rec := get(t, f.open, path)
		t.Logf("GET %-42s %3d %8d bytes %s", path, rec.Code, rec.Body.Len(), time.Since(start).Round(time.Millisecond))
	}
	coldIndex(t, f, "load-09999")
	b := newBrowser(t, f.server(t))
	for _, path := range []string{"/", "/processes/charge", "/instances", "/incidents", "/tasks?group=accounting", "/instances/load-00000"} {
		for run := range 2 { // the second load has the browser's cache warm
			b.run(chromedp.Navigate("about:blank"))
			start := time.Now()
			b.run(chromedp.Navigate(b.base + path))
			b.waitJSFor(`!!document.body.dataset.ready`, 2*time.Minute)
			took := time.Since(start)
			ms, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.dataset.readyMs`))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("page %-24s load %d: rendered %s ms after navigation began (%s in the test)", path, run+1, ms, took.Round(time.Millisecond))
			prof, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](profileJS))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("  where the time went: %s", prof)
		}
	}
}

// profileJS summarises the page's Performance timeline, in ms from the
// start of navigation: the document, the marks app.js sets (app: the
// entry module runs; page-module: the page's module is loaded; rendered),
// first contentful paint, and each resource as start-end (bytes
// transferred: 0 is the cache; "304" a revalidation).
const profileJS = `(() => {
  const r = Math.round, o = location.origin;
  const n = performance.getEntriesByType('navigation')[0];
  const out = [n.type + ' ' + n.name.replace(o, ''), 'doc ' + r(n.responseEnd), 'domInteractive ' + r(n.domInteractive)];
  for (const e of performance.getEntriesByType('paint')) out.push(e.name + ' ' + r(e.startTime));
  for (const e of performance.getEntriesByType('mark')) out.push(e.name + ' ' + r(e.startTime));
  for (const e of performance.getEntriesByType('resource')) {
    if (e.name.endsWith('/console/events')) continue;
    const size = e.transferSize === 0 ? 'cache' : (e.encodedBodySize > 0 && e.transferSize < e.encodedBodySize ? '304' : e.transferSize + 'B');
    out.push(e.name.replace(o, '').replace('/console/', '') + ' ' + r(e.startTime) + '-' + r(e.responseEnd) + ' (' + size + ')');
  }
  return out.join(' | ');
})()`

func took(overview string) string {
	if _, after, ok := strings.Cut(overview, `"took":`); ok {
		return after
	}
	return overview
}

// coldIndex opens a second console now that the facts are stored and logs
// how long its fact index takes, reading them from the stream, until it
// answers id's timeline.
func coldIndex(t *testing.T, f *fixture, id string) {
	t.Helper()
	start := time.Now()
	cold, err := console.New(f.eng, f.env.Conn, console.WithLogger(enginetest.QuietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	h := (&fixture{env: f.env, eng: f.eng, console: cold}).listener(nil)
	testwait.Until(t, 2*time.Minute, "the new console's index to answer "+id+"'s timeline", func() error {
		if rec := get(t, h, "/console/instances/"+id+"/timeline"); !strings.Contains(rec.Body.String(), `"from":"index"`) {
			return fmt.Errorf("%d %.200s", rec.Code, rec.Body)
		}
		return nil
	})
	t.Logf("a console opened now answered %s's timeline from its index after %s", id, time.Since(start).Round(time.Millisecond))
}
