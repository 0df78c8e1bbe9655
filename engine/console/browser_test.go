package console_test

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

type taskRecord = instance.Task

// The browser tests drive Debian's Chromium through the DevTools protocol
// (chromedp): Go tests like the others, no Python or Node runtime, no
// browser download. `make browsers` installs Chromium (and Firefox ESR,
// firefox_test.go); without it the tests skip loudly, except in CI (CI
// set), where they fail.

var screenshots = flag.Bool("screenshots", false, "write the browser tests' screenshots to docs/console (else to a temp dir)")

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: the console's browser tests need it in CI (make browsers installs it)")
	}
	t.Skip("SKIPPING the console's browser tests: chromium is not installed (make browsers installs it)")
	return ""
}

// A browser is one headless Chromium tab on a test server. It records
// what a person would see go wrong: console errors, uncaught exceptions,
// and every URL the page requested (all must be on 127.0.0.1).
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	errors   []string
	requests []string
	allowed  []string // error texts expected by the test (an API refusal shown to the user)
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	exe := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t, base: base}
	var tab context.Context
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type.String() == "error" || ev.Type.String() == "assert" {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.errors = append(b.errors, "console."+ev.Type.String()+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				d += " " + ev.ExceptionDetails.Exception.Description
			}
			b.errors = append(b.errors, "exception: "+d)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				b.errors = append(b.errors, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, ev.Request.URL)
		case *page.EventJavascriptDialogOpening:
			go chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}) // "Cancel instance?"
		}
	}))
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	tab = ctx
	b.ctx = ctx
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(b.check)
	return b
}

// allow expects an error entry containing text (a refusal the page shows).
func (b *browser) allow(text string) {
	b.mu.Lock()
	b.allowed = append(b.allowed, text)
	b.mu.Unlock()
}

// check fails the test on a console error or a request that left 127.0.0.1.
func (b *browser) check() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		b.t.Error("the browser made no request: the network listener saw nothing")
	}
	for _, r := range b.requests {
		u, err := url.Parse(r)
		switch {
		case err != nil:
			b.t.Errorf("request to %q: %v", r, err)
		case u.Scheme == "data" || u.Scheme == "blob" || r == "about:blank":
		case u.Hostname() != "127.0.0.1":
			b.t.Errorf("request left 127.0.0.1: %s", r)
		}
	}
outer:
	for _, e := range b.errors {
		for _, a := range b.allowed {
			if strings.Contains(e, a) {
				continue outer
			}
		}
		b.t.Errorf("browser error: %s", e)
	}
}

// open loads path and waits until the page module has rendered.
func (b *browser) open(path string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.base + path))
	b.waitJS(`!!document.body.dataset.ready`)
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// click clicks the element sel selects.
func (b *browser) click(sel string) { b.t.Helper(); b.run(chromedp.Click(chromedp.CSS(sel))) }

// text returns the visible text of the first element matching sel, once it is visible.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.run(chromedp.WaitVisible(chromedp.CSS(sel)))
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitText waits until the element matching sel shows text containing want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); return !!el && el.innerText.includes(%q); })()`, sel, want)
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		got, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).innerText||"(no element)"`, sel)))
		b.t.Fatalf("%s never showed %q; it shows %q", sel, want, got)
	}
}

// evalString evaluates a JavaScript expression to a string.
func (b *browser) evalString(expr string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// waitJS waits until the expression is truthy.
// A navigation the page starts (a followed link) replaces the document
// the poll runs in: the poll then starts again in the new one, within the
// same 30 s.
func (b *browser) waitJS(expr string) { b.t.Helper(); b.waitJSFor(expr, 30*time.Second) }

func (b *browser) waitJSFor(expr string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		gone := strings.Contains(err.Error(), "Cannot find context") || strings.Contains(err.Error(), "Execution context was destroyed") ||
			strings.Contains(err.Error(), "Inspected target navigated or closed")
		if !gone || time.Now().After(deadline) {
			b.t.Fatalf("never true: %s: %v", expr, err)
		}
	}
}

// screenshot saves the viewport as docs/console/<name>.png with
// -screenshots, else in a temp dir.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	dir := b.t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "docs", "console")
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// server serves the console as jetbpm serve does: the API under /v1 and
// the console at /, behind the same authentication (off here: every
// caller is an operator), on 127.0.0.1.
func (f *fixture) server(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(f.listener(nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestBrowserOverview(t *testing.T) {
	f := newFixture(t)
	f.start(t, "o1")
	f.failCharge.Store(false)
	f.start(t, "o2")
	b := newBrowser(t, f.server(t))
	b.open("/")
	b.waitText(`#processes tr[data-process="charge"]`, "charge")
	if got := b.text(`#total-incidents`); got != "1" {
		t.Fatalf("open incidents card shows %q, want 1", got)
	}
	if got := b.text(`#total-tasks`); got != "1" {
		t.Fatalf("open tasks card shows %q, want 1", got)
	}
	b.waitText(`#live`, "live")
	// Live: a new incident arrives through the event feed, no reload.
	f.failCharge.Store(true)
	f.start(t, "o3")
	b.waitText(`#total-incidents`, "2")
	b.waitText(`#recent`, "incident raised")
	// The cluster panel: this one node holds every partition.
	b.waitText(`#cluster-summary`, "1 engine node shares")
	if got := b.text(`#cluster tr[data-partition="0"] .holder`); got == "" || got == "none" {
		t.Errorf("partition 0's holder shows %q, want this node", got)
	}
	b.screenshot("overview")
}

// At history level incidents the pages say which facts are not recorded,
// the instance's timeline holds its incident only, and the pages that
// follow instances read them again by themselves (no instance fact comes
// to say they moved).
func TestBrowserHistoryLevelIncidents(t *testing.T) {
	f := newFixtureWith(t, engine.Options{History: history.Incidents})
	f.start(t, "h1")
	b := newBrowser(t, f.server(t))
	b.open("/instances/h1")
	b.waitText(`#history-note`, "History level incidents: instance, task, message facts are not recorded")
	b.waitText(`#timeline`, "incident raised at charge-card")
	if got := b.evalString(`String(document.querySelectorAll('#timeline li').length)`); got != "1" {
		t.Fatalf("timeline has %s entries, want the raised incident only", got)
	}
	b.run(chromedp.ScrollIntoView(`#history-note`))
	b.screenshot("instance-history-incidents")

	b.open("/")
	b.waitText(`#history-note`, "not recorded")
	b.waitText(`#total-active`, "1")
	b.waitText(`#live`, "live")
	f.failCharge.Store(false)
	f.start(t, "h2") // no fact at all at this level: the page reads the counts again
	b.waitText(`#total-active`, "2")
	b.screenshot("overview-history-incidents")
}

// A person goes from page to page: every page keeps a live event stream,
// and each must let go of it when the page goes, or the browser's six
// connections to the host run out and the seventh page never loads.
func TestBrowserManyPageLoads(t *testing.T) {
	f := newFixture(t)
	f.start(t, "m1")
	b := newBrowser(t, f.server(t))
	for range 3 {
		for _, path := range []string{"/", "/incidents", "/instances", "/tasks"} {
			b.open(path)
			b.waitText(`#live`, "live")
		}
	}
}

// The instance page marks the failing node, shows the cause next to it,
// and its Retry button retries through the API: the instance moves on.
func TestBrowserInstanceRetry(t *testing.T) {
	f := newFixture(t)
	v := f.start(t, "r1")
	inc := v.Incidents[0].ID
	b := newBrowser(t, f.server(t))
	b.open("/instances/r1")
	b.waitText(`.djs-overlays[data-container-id="charge-card"] .cause`, "card declined by the issuer")
	b.waitJS(`document.querySelector('.djs-element[data-element-id="charge-card"]').classList.contains('incident')`)
	b.waitText(`#incidents`, "card declined by the issuer")
	b.waitText(`#timeline`, "incident raised at charge-card")
	b.screenshot("instance-incident")

	f.failCharge.Store(false)
	b.click(fmt.Sprintf(`[data-actions=%q] button.primary`, inc))
	b.waitText(`#action-answer`, "engine: retry done")
	if _, err := f.eng.WaitUntil(tctx(t), "r1", func(v *engine.InstanceView) bool {
		return len(v.Incidents) == 0 && len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "approve"
	}); err != nil {
		t.Fatalf("after retry: %v", err)
	}
	// The page redraws from the facts: approve is active now, and the
	// completed path — the start, the retried task and the flows between —
	// is marked passed; approve and the flow after it are not.
	b.waitJS(`document.querySelector('.djs-element[data-element-id="approve"]')?.classList.contains('active')`)
	b.waitJS(`['received', 'f1', 'charge-card', 'f2'].every((id) => document.querySelector('.djs-element[data-element-id="' + id + '"]')?.classList.contains('passed'))`)
	if got := b.evalString(`['approve', 'f3', 'done'].filter((id) => document.querySelector('.djs-element[data-element-id="' + id + '"]').classList.contains('passed')).join()`); got != "" {
		t.Fatalf("marked passed but not passed: %s", got)
	}
	b.screenshot("instance-passed")
}

// The incidents page resolves one incident with variables and abandons
// two selected rows in bulk; each row shows the engine's answer.
func TestBrowserIncidentsResolveAndBulkAbandon(t *testing.T) {
	f := newFixture(t)
	ids := map[string]string{}
	for _, id := range []string{"b1", "b2", "b3"} {
		ids[id] = f.start(t, id).Incidents[0].ID
	}
	b := newBrowser(t, f.server(t))
	testwait.True(t, 10*time.Second, "three incident records", func() bool {
		l, err := f.eng.Incidents(tctx(t), incidents.Filter{State: "open"})
		return err == nil && len(l) == 3
	})
	b.open("/incidents")
	row := func(id string) string { return fmt.Sprintf(`tr[data-incident=%q]`, ids[id]) }
	b.waitText(row("b3"), "card declined by the issuer")
	b.screenshot("incidents")

	b.click(row("b1") + ` [data-actions] button:nth-child(2)`) // Resolve…
	b.run(chromedp.WaitVisible(chromedp.CSS(`#resolve-vars`)), chromedp.SetValue(chromedp.CSS(`#resolve-vars`), `{"charged": "by phone"}`))
	b.screenshot("incident-resolve")
	b.click(`#resolve-submit`)
	b.waitText(row("b1")+` .answer`, "engine: resolve done, incident resolved")
	b.waitText(row("b1")+` td.state`, "resolved")
	v, err := f.eng.WaitUntil(tctx(t), "b1", func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "approve" })
	if err != nil || v.Variables["charged"] != "by phone" {
		t.Fatalf("b1 after resolve: %+v %v", v, err)
	}

	b.click(row("b2") + ` input[name=sel]`)
	b.click(row("b3") + ` input[name=sel]`)
	b.click(`#bulk-abandon`)
	b.waitText(row("b2")+` .answer`, "incident deadLettered")
	b.waitText(row("b3")+` .answer`, "incident deadLettered")
	b.waitText(row("b2")+` td.state`, "deadLettered")
	b.waitText(row("b3")+` td.state`, "deadLettered")
	for _, id := range []string{"b2", "b3"} {
		if v, err := f.eng.Wait(tctx(t), id); err != nil || v.Status != instance.Terminated {
			t.Fatalf("%s after abandon: %+v %v", id, v, err)
		}
	}
	b.screenshot("incidents-answers")
}

// The incident list pages through the API's cursors: next and previous
// keep the filters, "select all" selects the rows of the page shown, and
// a bulk action acts on those only.
func TestBrowserIncidentsPages(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"g1", "g2", "g3"} {
		f.start(t, id)
	}
	testwait.True(t, 10*time.Second, "three incident records", func() bool {
		l, err := f.eng.Incidents(tctx(t), incidents.Filter{State: "open"})
		return err == nil && len(l) == 3
	})
	all, err := f.eng.Incidents(tctx(t), incidents.Filter{State: "open"})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f.server(t))
	b.open("/incidents?process=charge&limit=2")
	rows := `document.querySelectorAll('#incidents tbody tr').length`
	b.waitText(`nav.pager`, "2 shown of 3 matching")
	b.waitJS(rows + ` === 2 && !!document.querySelector('tr[data-incident="` + all[1].ID + `"]')`)
	b.click(`#incidents thead input[type=checkbox]`) // select all on this page
	b.waitJS(`document.querySelectorAll('input[name=sel]:checked').length === 2`)

	b.click(`nav.pager a[rel=next]`)
	b.waitJS(`!!document.body.dataset.ready && location.search.includes('after=')`)
	b.waitText(`nav.pager`, "1 shown of 3 matching")
	b.waitJS(rows + ` === 1 && !!document.querySelector('tr[data-incident="` + all[2].ID + `"]')`)
	if u := b.text(`nav.pager a[rel=prev]`); u != "‹ Previous" {
		t.Fatalf("previous link %q", u)
	}
	b.click(`#incidents thead input[type=checkbox]`)
	b.click(`#bulk-abandon`)
	b.waitText(fmt.Sprintf(`tr[data-incident=%q] .answer`, all[2].ID), "incident deadLettered")
	for i, want := range []string{"open", "open", "deadLettered"} {
		rec, err := f.eng.Incident(tctx(t), all[i].ID)
		if err != nil || string(rec.State) != want {
			t.Fatalf("incident %s after the bulk abandon on the second page: %v %v, want %s", all[i].ID, rec, err, want)
		}
	}

	b.click(`nav.pager a[rel=prev]`)
	b.waitJS(`!!document.body.dataset.ready && location.search.includes('before=')`)
	b.waitJS(rows + ` === 2 && !!document.querySelector('tr[data-incident="` + all[0].ID + `"]')`)
	if q := b.evalString(`location.search`); !strings.Contains(q, "process=charge") || !strings.Contains(q, "limit=2") {
		t.Fatalf("the previous page lost the filters: %s", q)
	}
}

// The task list on a phone: claim, a conflict shown inline, complete with
// a generated form.
func TestBrowserTasks(t *testing.T) {
	f := newFixture(t)
	f.failCharge.Store(false)
	f.start(t, "t1")
	f.start(t, "t2")
	tasks := func(instance string) *taskRecord {
		l, err := f.eng.Tasks(tctx(t), engine.TaskFilter{Instance: instance, State: engine.TasksAll})
		if err != nil || len(l) != 1 {
			t.Fatalf("tasks of %s: %v %v", instance, l, err)
		}
		return l[0]
	}
	testwait.True(t, 10*time.Second, "two task records", func() bool {
		l, err := f.eng.Tasks(tctx(t), engine.TaskFilter{})
		return err == nil && len(l) == 2
	})
	t1, t2 := tasks("t1").ID, tasks("t2").ID
	b := newBrowser(t, f.server(t))
	b.run(chromedp.EmulateViewport(390, 800, chromedp.EmulateMobile))
	b.open("/tasks?user=alice&group=accounting")
	card := func(id string) string { return fmt.Sprintf(`article[data-task=%q]`, id) }
	b.waitText(card(t1), "Approve order")
	b.waitText(card(t2), "Approve order")

	b.click(card(t1) + ` .actions button.primary`) // Claim
	b.waitText(card(t1)+` .holder`, "held by alice")
	if got := tasks("t1").Assignee; got != "alice" {
		t.Fatalf("t1 assignee %q after claim", got)
	}

	b.click(card(t1) + ` .actions button:last-child`) // Complete…
	b.run(chromedp.SetValue(chromedp.CSS(card(t1)+` input[name=__name]`), "approved"),
		chromedp.SetValue(chromedp.CSS(card(t1)+` input[name=__value]`), "true"))
	b.screenshot("tasks-phone")
	b.click(card(t1) + ` form.complete button[type=submit]`)
	b.waitText(card(t1)+` .answer`, "engine: complete done, task completed")
	v, err := f.eng.Wait(tctx(t), "t1")
	if err != nil || v.Status != instance.Completed || v.Variables["approved"] != true {
		t.Fatalf("t1 after complete: %+v %v", v, err)
	}

	// alice fills in t2's form while bob completes it: her complete is
	// refused, and the card says why (an open form keeps the list as it is).
	b.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card(t1))) // the list reloaded: t1 is done
	b.click(card(t2) + ` .actions button:last-child`)
	b.run(chromedp.WaitVisible(chromedp.CSS(card(t2) + ` form.complete`)))
	if _, err := f.eng.CompleteTask(tctx(t), t2, "bob", nil); err != nil {
		t.Fatal(err)
	}
	b.allow("409")
	b.click(card(t2) + ` form.complete button[type=submit]`)
	b.waitText(card(t2)+` .answer.err`, "completed by bob")
	b.screenshot("tasks-phone-conflict")
}

// The process page draws the diagram with per-node counts and deploys a
// dropped file; a file without DI is drawn laid out.
func TestBrowserProcessDeploy(t *testing.T) {
	f := newFixture(t)
	f.start(t, "p1")
	f.failCharge.Store(false)
	f.start(t, "p2")
	b := newBrowser(t, f.server(t))
	b.open("/processes/charge")
	b.waitText(`.djs-overlays[data-container-id="charge-card"]`, "1")
	b.waitText(`#nodes`, "approve")
	b.screenshot("process")

	v2 := filepath.Join(t.TempDir(), "charge-v2.bpmn")
	if err := os.WriteFile(v2, []byte(strings.Replace(chargeXML, `name="Approve order"`, `name="Approve the order"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`#deploy-file`), []string{v2}))
	b.waitText(`#deploy-answer`, "charge v2 (new)")
	if p, err := f.eng.ProcessInfo(tctx(t), "charge", 0); err != nil || p.Version != 2 {
		t.Fatalf("after deploy: %+v %v", p, err)
	}

	noDI := chargeXML[:strings.Index(chargeXML, "<bpmndi:BPMNDiagram")] + "</bpmn:definitions>"
	noDI = strings.ReplaceAll(noDI, `id="charge"`, `id="plain"`)
	if _, err := f.eng.DeployXML(tctx(t), strings.NewReader(noDI)); err != nil {
		t.Fatal(err)
	}
	// Without DI, the server lays the diagram out.
	b.open("/processes/plain")
	b.waitJS(`!!document.querySelector('.djs-element[data-element-id="approve"]')`)
}

// A process with no diagram of its own — built in Go, with a gateway, a
// boundary event and an event sub-process — is drawn laid out, on the
// process page with its counts and on the instance page with its marks.
func TestBrowserLaidOutDiagram(t *testing.T) {
	f := newFixture(t)
	b0 := model.NewBuilder("laidout").StartEvent("start").ExclusiveGateway("big").
		UserTask("review", model.Named("Review the order")).Task("auto", model.Named("Accept")).ExclusiveGateway("join").EndEvent("end").
		TimerBoundary("late", "review", model.Duration("PT1H"), true).EndEvent("tooLate").
		Sequence("start", "big").Flow("big", "review", model.When("amount > 100")).DefaultFlow("big", "auto").
		Flow("review", "join").Flow("auto", "join").Sequence("join", "end").Flow("late", "tooLate")
	b0.EventSubProcess("cancel", true).MessageStartEvent("cancelled", "cancel", model.CorrelationKey("orderId")).EndEvent("ce").Flow("cancelled", "ce")
	p, err := b0.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Deploy(tctx(t), p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Start(tctx(t), "laidout", map[string]any{"amount": 500, "orderId": "o-1"}, engine.InstanceID("lo-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.WaitUntil(tctx(t), "lo-1", func(v *engine.InstanceView) bool { return slices.Contains(v.ActiveNodes, "review") }); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f.server(t))
	b.open("/processes/laidout")
	for _, id := range []string{"big", "review", "late", "cancel", "cancelled"} {
		b.waitJS(`!!document.querySelector('.djs-element[data-element-id="` + id + `"]')`)
	}
	b.waitText(`.djs-overlays[data-container-id="review"]`, "1")
	b.screenshot("process-laid-out")
	b.open("/instances/lo-1")
	b.waitJS(`document.querySelector('.djs-element[data-element-id="review"]')?.classList.contains('active')`)
	b.waitJS(`document.querySelector('.djs-element[data-element-id="start"]')?.classList.contains('passed')`)
	b.screenshot("instance-laid-out")
}

// The instances list filters, and an instance is cancelled from its page.
func TestBrowserInstancesAndCancel(t *testing.T) {
	f := newFixture(t)
	f.start(t, "c1")
	f.failCharge.Store(false)
	f.start(t, "c2")
	b := newBrowser(t, f.server(t))
	b.open("/instances?process=charge&status=incident")
	b.waitText(`#instances`, "c1")
	if got := b.text(`#instances tbody`); strings.Contains(got, "c2") {
		t.Fatalf("status=incident lists c2: %q", got)
	}
	b.screenshot("instances")
	b.open("/instances/c2")
	b.waitJS(`document.querySelector('.djs-element[data-element-id="approve"]')?.classList.contains('active')`)
	b.click(`#cancel`)
	b.waitText(`#cancel-answer`, "engine: terminated")
	if v, err := f.eng.Wait(tctx(t), "c2"); err != nil || v.Status != instance.Terminated {
		t.Fatalf("c2 after cancel: %+v %v", v, err)
	}
}

// The instance page's variables editor writes only what changed through
// POST /v1/instances/{id}/variables; a malformed edit is refused inline
// and sends nothing.
func TestBrowserSetVariables(t *testing.T) {
	f := newFixture(t)
	f.failCharge.Store(false)
	f.start(t, "v1")
	b := newBrowser(t, f.server(t))
	b.open("/instances/v1")
	b.waitText(`#variables`, "amount")
	b.click(`#set-vars summary`)
	b.run(chromedp.WaitVisible(chromedp.CSS(`#set-vars-json`)), chromedp.SetValue(chromedp.CSS(`#set-vars-json`), `[1]`))
	b.click(`#set-vars-submit`)
	b.waitText(`#set-vars-error`, "want a JSON object")
	b.run(chromedp.SetValue(chromedp.CSS(`#set-vars-json`), `{"note": "ops"}`))
	b.click(`#set-vars-submit`)
	b.waitText(`#set-vars-error`, "cannot be removed (amount")
	b.run(chromedp.SetValue(chromedp.CSS(`#set-vars-json`), `{"amount": 42, "charged": true, "note": "ops"}`))
	b.screenshot("instance-set-vars")
	b.click(`#set-vars-submit`)
	b.waitText(`#action-answer`, "engine: variables set (note)")
	b.waitText(`#variables`, `"ops"`)
	v, err := f.eng.Instance(tctx(t), "v1")
	if err != nil || v.Variables["note"] != "ops" || v.Variables["amount"] != int64(42) {
		t.Fatalf("v1 after set: %+v %v", v, err)
	}
}
