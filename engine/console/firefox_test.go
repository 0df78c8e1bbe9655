package console_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// The Firefox tests drive Debian's firefox-esr headless through WebDriver
// BiDi (bidi_test.go): Firefox started with --remote-debugging-port 0
// prints the WebSocket it listens on, and one session there loads the
// pages, evaluates scripts, presses keys, clicks and takes screenshots,
// and sends the console's log entries and the page's requests as events.
// `make browsers` installs it; without it the tests skip loudly, except in
// CI.
//
// Headless Firefox here never has the window focus (document.hasFocus()
// is false, browsingContext.activate does not change it): typing and Tab
// work, but Enter or Space on a focused button does not activate it, so
// the tests click with the mouse and check keyboard reach with Tab.

func firefoxPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"firefox-esr", "firefox"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("firefox is not installed: the console's Firefox tests need it in CI (make browsers installs firefox-esr)")
	}
	t.Skip("SKIPPING the console's Firefox tests: firefox-esr is not installed (make browsers installs it)")
	return ""
}

// firefoxPrefs keep a test profile quiet: no first-run pages, updates,
// telemetry or background requests (the remote agent sets most of these
// itself; these are the ones that matter here).
const firefoxPrefs = `
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.page", 0);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.disabledForTesting", true);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("extensions.update.enabled", false);
user_pref("focusmanager.testmode", true);
`

// A firefox is one headless Firefox with one tab on a test server. Like
// the Chromium browser, it records console errors, uncaught exceptions
// and every URL the page requested (all must be on 127.0.0.1).
type firefox struct {
	t    *testing.T
	ctx  context.Context
	s    *bidiSession
	tab  string // the browsing context
	base string

	mu       sync.Mutex
	errors   []string
	requests []string
}

var bidiListening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

func newFirefox(t *testing.T, base string) *firefox {
	t.Helper()
	exe := firefoxPath(t)
	profile := t.TempDir()
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(firefoxPrefs), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.Command(exe, "--headless", "--no-remote", "--profile", profile, "--remote-debugging-port", "0")
	cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting firefox: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	var output strings.Builder // what it said before the address, for a failure
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := bidiListening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			} else if !sent {
				output.WriteString(sc.Text() + "\n")
			}
		}
		if !sent {
			close(found)
		}
	}()
	var wsURL string
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("firefox exited without a WebDriver BiDi address")
		}
		wsURL = u
	case <-time.After(time.Minute):
		t.Fatal("firefox printed no WebDriver BiDi address within a minute")
	}
	ws, err := wsDial(ctx, wsURL+"/session")
	if err != nil {
		t.Fatalf("connecting to firefox at %s: %v", wsURL, err)
	}
	t.Cleanup(ws.close)
	f := &firefox{t: t, ctx: ctx, base: base}
	f.s = newBidiSession(ws, f.event)
	f.call("session.new", map[string]any{"capabilities": map[string]any{}}, nil)
	f.call("session.subscribe", map[string]any{"events": []string{"log.entryAdded", "network.beforeRequestSent"}}, nil)
	var tree struct {
		Contexts []struct {
			Context string `json:"context"`
		} `json:"contexts"`
	}
	f.call("browsingContext.getTree", map[string]any{}, &tree)
	if len(tree.Contexts) == 0 {
		t.Fatal("firefox has no tab")
	}
	f.tab = tree.Contexts[0].Context
	f.call("browsingContext.activate", map[string]any{"context": f.tab}, nil) // key events go to the focused document
	f.viewport(1280, 900)
	t.Cleanup(f.check)
	return f
}

func (f *firefox) event(method string, params json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case "log.entryAdded":
		var e struct {
			Type, Level, Text string
		}
		json.Unmarshal(params, &e)
		if e.Level == "error" {
			f.errors = append(f.errors, e.Type+": "+e.Text)
		}
	case "network.beforeRequestSent":
		var e struct {
			Request struct{ URL string } `json:"request"`
		}
		json.Unmarshal(params, &e)
		f.requests = append(f.requests, e.Request.URL)
	}
}

// check fails the test on a console error or a request that left 127.0.0.1.
func (f *firefox) check() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		f.t.Error("firefox made no request: the network events saw nothing")
	}
	for _, r := range f.requests {
		u, err := url.Parse(r)
		switch {
		case err != nil:
			f.t.Errorf("request to %q: %v", r, err)
		case u.Scheme == "data" || u.Scheme == "blob" || u.Scheme == "about":
		case u.Hostname() != "127.0.0.1":
			f.t.Errorf("request left 127.0.0.1: %s", r)
		}
	}
	for _, e := range f.errors {
		f.t.Errorf("firefox error: %s", e)
	}
}

func (f *firefox) call(method string, params, out any) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	if err := f.s.call(ctx, method, params, out); err != nil {
		f.t.Fatal(err)
	}
}

func (f *firefox) viewport(w, h int) {
	f.t.Helper()
	f.call("browsingContext.setViewport", map[string]any{"context": f.tab, "viewport": map[string]int{"width": w, "height": h}}, nil)
}

// open loads path and waits until the page module has rendered.
func (f *firefox) open(path string) {
	f.t.Helper()
	f.call("browsingContext.navigate", map[string]any{"context": f.tab, "url": f.base + path, "wait": "complete"}, nil)
	f.waitJS(`!!document.body.dataset.ready`)
}

// eval evaluates expr (awaiting a promise) and returns its value.
func (f *firefox) eval(expr string) (any, error) {
	var res struct {
		Type   string `json:"type"`
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		Exception struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	err := f.s.call(ctx, "script.evaluate", map[string]any{
		"expression": expr, "target": map[string]string{"context": f.tab}, "awaitPromise": true, "resultOwnership": "none",
	}, &res)
	if err != nil {
		return nil, err
	}
	if res.Type == "exception" {
		return nil, fmt.Errorf("exception: %s", res.Exception.Text)
	}
	return res.Result.Value, nil
}

// waitJS waits, at most 30 s, until expr is truthy: the page checks it on
// every frame. A navigation that replaces the document ends the check,
// which then starts again in the new one.
func (f *firefox) waitJS(expr string) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ms := time.Until(deadline).Milliseconds()
		v, err := f.eval(fmt.Sprintf(`new Promise((done) => {
  const end = performance.now() + %d;
  const check = () => {
    let ok = false;
    try { ok = !!(%s); } catch (e) { /* not yet */ }
    if (ok || performance.now() > end) done(ok); else requestAnimationFrame(check);
  };
  check();
})`, ms, expr))
		if err == nil {
			if v == true {
				return
			}
			break
		}
		last = err // the document went away under the check
	}
	got, _ := f.eval(`document.body ? document.body.innerText.slice(0, 600) : '(no body)'`)
	f.t.Fatalf("firefox: never true within 30 s: %s (%v); the page shows %q", expr, last, got)
}

// waitText waits until the element matching sel shows text containing want.
func (f *firefox) waitText(sel, want string) {
	f.t.Helper()
	f.waitJS(fmt.Sprintf(`(() => { const el = document.querySelector(%q); return !!el && el.innerText.includes(%q); })()`, sel, want))
}

// click clicks the middle of the element sel selects with the mouse
// (WebDriver input actions: real pointer events).
func (f *firefox) click(sel string) {
	f.t.Helper()
	v, err := f.eval(fmt.Sprintf(`(() => {
  const el = document.querySelector(%q);
  if (!el) return null;
  el.scrollIntoView({ block: 'center' });
  const r = el.getBoundingClientRect();
  return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)];
})()`, sel))
	xy, ok := v.([]any)
	if err != nil || !ok || len(xy) != 2 {
		f.t.Fatalf("click: no element %s (%v, %v)", sel, v, err)
	}
	// A remote number is {"type": "number", "value": n}.
	coord := func(x any) int {
		m, _ := x.(map[string]any)
		n, _ := m["value"].(float64)
		return int(n)
	}
	f.call("input.performActions", map[string]any{"context": f.tab, "actions": []any{map[string]any{
		"type": "pointer", "id": "mouse", "parameters": map[string]string{"pointerType": "mouse"}, "actions": []any{
			map[string]any{"type": "pointerMove", "x": coord(xy[0]), "y": coord(xy[1])},
			map[string]any{"type": "pointerDown", "button": 0},
			map[string]any{"type": "pointerUp", "button": 0},
		}}}}, nil)
}

// tabTo presses Tab until the element sel selects has the focus, at most
// limit times: it is reachable from the keyboard.
func (f *firefox) tabTo(sel string, limit int) {
	f.t.Helper()
	for range limit {
		f.call("input.performActions", map[string]any{"context": f.tab, "actions": []any{map[string]any{
			"type": "key", "id": "keyboard", "actions": []any{
				map[string]string{"type": "keyDown", "value": "\uE004"},
				map[string]string{"type": "keyUp", "value": "\uE004"},
			}}}}, nil)
		if v, err := f.eval(fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, sel)); err == nil && v == true {
			return
		}
	}
	got, _ := f.eval(`document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : 'nothing'`)
	f.t.Fatalf("%s not reached with %d tabs; the focus is on %v", sel, limit, got)
}

// typeInto clicks the element sel selects and types text into it, a key
// at a time.
func (f *firefox) typeInto(sel, text string) {
	f.t.Helper()
	f.click(sel)
	var keys []any
	for _, r := range text {
		keys = append(keys, map[string]string{"type": "keyDown", "value": string(r)}, map[string]string{"type": "keyUp", "value": string(r)})
	}
	f.call("input.performActions", map[string]any{"context": f.tab, "actions": []any{map[string]any{
		"type": "key", "id": "keyboard", "actions": keys}}}, nil)
}

// screenshot saves the viewport as docs/console/<name>.png with
// -screenshots, else in a temp dir.
func (f *firefox) screenshot(name string) {
	f.t.Helper()
	var res struct {
		Data string `json:"data"`
	}
	f.call("browsingContext.captureScreenshot", map[string]any{"context": f.tab}, &res)
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		f.t.Fatalf("screenshot: not a PNG (%d bytes, %v)", len(png), err)
	}
	dir := f.t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "docs", "console")
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// Every page loads in Firefox and shows its data, with no console error
// and no request off the host; a task is claimed from the keyboard on a
// phone-sized screen.
func TestFirefoxPages(t *testing.T) {
	fx := newFixture(t)
	v := fx.start(t, "ff1") // an incident at charge-card
	fx.failCharge.Store(false)
	fx.start(t, "ff2") // waits at the approve task
	testwait.True(t, 10*time.Second, "the incident and the task listed", func() bool {
		incs, err1 := fx.eng.Incidents(tctx(t), incidents.Filter{State: "open"})
		tasks, err2 := fx.eng.Tasks(tctx(t), engine.TaskFilter{})
		return err1 == nil && err2 == nil && len(incs) == 1 && len(tasks) == 1
	})
	b := newFirefox(t, fx.server(t))

	b.open("/")
	b.waitText(`#processes tr[data-process="charge"]`, "charge")
	b.waitText(`#total-incidents`, "1")
	b.waitText(`#total-tasks`, "1")
	b.waitText(`#live`, "live") // the event stream (EventSource) is open
	b.waitText(`#cluster-summary`, "1 engine node shares")

	b.open("/processes/charge")
	b.waitText(`.djs-overlays[data-container-id="charge-card"]`, "1")
	b.waitText(`#nodes`, "approve")

	b.open("/instances")
	b.waitText(`#instances`, "ff1")
	b.waitText(`#instances`, "ff2")

	b.open("/instances/ff1")
	b.waitText(`.djs-overlays[data-container-id="charge-card"] .cause`, "card declined by the issuer")
	b.waitJS(`document.querySelector('.djs-element[data-element-id="charge-card"]').classList.contains('incident')`)
	b.waitText(`#timeline`, "incident raised at charge-card")
	b.screenshot("firefox-instance")

	b.open("/incidents")
	b.waitText(fmt.Sprintf(`tr[data-incident=%q]`, v.Incidents[0].ID), "card declined by the issuer")
	b.waitText(`nav.pager`, "1 shown of 1 matching")

	b.viewport(390, 800)
	b.open("/tasks?user=alice&group=accounting")
	card := `article[data-task]`
	b.waitText(card, "Approve order")
	b.waitText(card+` .holder`, "nobody holds it")
	// The filter form's Show button, then the card's links, then Claim.
	b.eval(`document.querySelector('form.filters button').focus()`)
	b.tabTo(card+` .actions button.primary`, 6)
	b.click(card + ` .actions button.primary`) // Claim
	b.waitText(card+` .holder`, "held by alice")
	tasks, err := fx.eng.Tasks(tctx(t), engine.TaskFilter{Instance: "ff2"})
	if err != nil || len(tasks) != 1 || tasks[0].Assignee != "alice" {
		t.Fatalf("ff2's task after the claim in firefox: %+v %v", tasks, err)
	}
}
