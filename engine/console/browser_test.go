package console_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium through the DevTools protocol
// (chromedp): Go tests like the others, no Python or Node runtime, no
// browser download. `make chromium` installs Chromium; without it the
// tests skip loudly, except in CI (CI set), where they fail.

var screenshots = flag.Bool("screenshots", false, "write the browser tests' screenshots to docs/console (else to a temp dir)")

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: the console's browser tests need it in CI (make chromium installs it)")
	}
	t.Skip("SKIPPING the console's browser tests: chromium is not installed (make chromium installs it)")
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
	b.run(chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(`body[data-ready]`)))
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
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
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		got, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).innerText||"(no element)"`, sel)))
		b.t.Fatalf("%s never showed %q; it shows %q", sel, want, got)
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
// the console at /, on 127.0.0.1.
func (f *fixture) server(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/v1/", apiHandler(t, f))
	mux.Handle("/", f.console)
	srv := httptest.NewServer(mux)
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
	b.screenshot("overview")
}
