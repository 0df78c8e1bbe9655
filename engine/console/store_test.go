package console_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/streams"
)

// damage writes two open damage records into the fixture's store, as the
// store check writes them: a lost instance of charge, named by its job,
// and a stream that went back.
func (f *fixture) damage(t *testing.T) (instanceKey, streamKey string) {
	t.Helper()
	kv, err := f.env.JS.KeyValue(tctx(t), streams.LostBucket)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	inst := lost.InstanceRecord("lost-07", []lost.Trace{{
		Instance: "lost-07", Source: "job", ID: "lost-07/charge-card/2", At: now,
		Process: "charge", Element: "charge-card", Vars: map[string]any{"amount": 7},
	}}, now)
	gap := lost.GapRecord(lost.Gap{Stream: "KV_jetbpm-instances", Marked: 20, Found: 6}, now)
	for _, r := range []lost.Record{inst, gap} {
		data, err := streams.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Create(tctx(t), r.Key(), data); err != nil {
			t.Fatal(err)
		}
	}
	return inst.Key(), gap.Key()
}

// The damage banner and the store page in Chromium: every page says the
// store is damaged and links the records; the operator recreates the lost
// instance and dismisses the gap with a reason; the banner goes.
func TestBrowserStoreDamage(t *testing.T) {
	f := newFixture(t)
	instKey, gapKey := f.damage(t)
	b := newBrowser(t, f.server(t))
	b.open("/instances")
	b.waitText(`#damage`, "Store damaged: 2 open damage record(s) (lost-07, KV_jetbpm-instances)")
	b.screenshot("store-banner")

	b.click(`#damage a`)
	b.waitJS(`location.pathname === '/store' && document.body.dataset.ready === 'store'`)
	b.waitText(fmt.Sprintf(`tr[data-record=%q]`, instKey), "from job lost-07/charge-card/2")
	b.waitText(fmt.Sprintf(`tr[data-record=%q]`, gapKey), "went back from sequence 20 to 6")
	b.screenshot("store")

	b.click(fmt.Sprintf(`tr[data-record=%q] button.primary`, instKey)) // Recreate
	b.waitText(`#check-answer`, "recreated as lost-07-recreated")
	v, err := f.eng.Instance(tctx(t), "lost-07-recreated")
	if err != nil || v.ProcessID != "charge" || fmt.Sprint(v.Variables["amount"]) != "7" {
		t.Fatalf("the recreated instance: %+v %v", v, err)
	}
	// A dismissal needs a reason: the form does not send an empty one.
	row := fmt.Sprintf(`tr[data-record=%q]`, gapKey)
	b.click(row + ` button.danger`)
	if rec := b.evalString(`document.querySelector('#damage') ? 'banner' : 'none'`); rec != "banner" {
		t.Fatalf("the banner went before the gap was dismissed")
	}
	b.run(chromedp.SetValue(chromedp.CSS(row+` input[name=reason]`), "restored from last night's backup"))
	b.click(row + ` button.danger`)
	b.waitText(`#check-answer`, gapKey+": engine: dismissed")
	b.waitText(`#store-whole`, "The store is whole")
	b.waitJS(`!document.querySelector('#damage')`)

	b.click(`#check-now`)
	b.waitText(`#check-answer`, "0 open record(s)")
	b.open("/store?all=1")
	b.waitText(fmt.Sprintf(`tr[data-record=%q]`, gapKey), "restored from last night's backup")
	b.waitText(fmt.Sprintf(`tr[data-record=%q]`, instKey), "recreated")
	b.screenshot("store-closed")
	b.open("/")
	b.waitJS(`!document.querySelector('#damage')`)
}

// The same banner and a dismissal in Firefox.
func TestFirefoxStoreDamage(t *testing.T) {
	f := newFixture(t)
	_, gapKey := f.damage(t)
	b := newFirefox(t, f.server(t))
	b.open("/")
	b.waitText(`#damage`, "Store damaged: 2 open damage record(s)")
	b.open("/store")
	row := fmt.Sprintf(`tr[data-record=%q]`, gapKey)
	b.waitText(row, "went back from sequence 20 to 6")
	b.typeInto(row+` input[name=reason]`, "accepted: nothing of value")
	b.click(row + ` button.danger`)
	b.waitText(`#check-answer`, gapKey+": engine: dismissed")
	b.waitText(`#damage`, "1 open damage record(s) (lost-07)")
	b.screenshot("firefox-store")
}
