package console_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// formsFixture deploys testdata/forms.bpmn and starts its instance r1
// (amount 120); open waits for r1's open task and returns it, which
// must be at node.
func formsFixture(t *testing.T) (f *fixture, open func(node string) *instance.Task) {
	t.Helper()
	f = newFixture(t)
	xml, err := os.ReadFile("testdata/forms.bpmn")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.DeployXML(tctx(t), bytes.NewReader(xml)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Start(tctx(t), "review", map[string]any{"amount": 120}, engine.InstanceID("r1")); err != nil {
		t.Fatal(err)
	}
	open = func(node string) *instance.Task {
		t.Helper()
		var task *instance.Task
		testwait.Until(t, 10*time.Second, "the task at "+node, func() error {
			l, err := f.eng.Tasks(tctx(t), engine.TaskFilter{Instance: "r1"})
			if err == nil && (len(l) != 1 || l[0].Node != node) {
				err = fmt.Errorf("open tasks %v", l)
			}
			if err == nil {
				task = l[0]
			}
			return err
		})
		return task
	}
	return f, open
}

// TestBrowserTaskForms: the forms a BPMN file holds are rendered by
// form-js on the task list. The Zeebe embedded form shows the task's
// variables, refuses an incomplete submit next to its fields (the task
// stays open), and completes the task with what was typed and chosen;
// the Camunda 7 generated form does the same with its typed fields.
func TestBrowserTaskForms(t *testing.T) {
	f, open := formsFixture(t)
	review := open("check")
	if !review.FormEmbedded {
		t.Fatalf("task %s: formEmbedded false", review.ID)
	}

	b := newBrowser(t, f.server(t))
	b.run(chromedp.EmulateViewport(390, 800, chromedp.EmulateMobile)) // the embedded form on a phone
	b.open("/tasks?user=alice")
	card := fmt.Sprintf(`article[data-task=%q]`, review.ID)
	b.waitText(card, "Review order")
	// A listed task has a form: the page loads the viewer before it is
	// asked for.
	b.waitJS(`!!window.FormViewer`)
	began := time.Now()
	b.click(card + ` .actions button:last-child`) // Complete…
	b.waitText(card+` .fjs-form`, "Review the order")
	t.Logf("the first form drawn %v after the click", time.Since(began).Round(time.Millisecond))
	if got := b.evalString(fmt.Sprintf(`document.querySelector(%q).value`, card+` .fjs-form-field-number input`)); got != "120" {
		t.Errorf("amount shows %q, want the task's variable 120", got)
	}
	// Nothing filled in: form-js marks the fields, the engine hears nothing.
	b.click(card + ` .complete.schema button.primary`)
	b.waitText(card+` .fjs-form`, "Field is required.")
	if rec, err := f.eng.Task(tctx(t), review.ID); err != nil || rec.State != instance.TaskAssigned {
		t.Fatalf("task after an invalid submit: %+v %v", rec, err)
	}
	b.run(chromedp.SendKeys(chromedp.CSS(card+` .fjs-form-field-textfield input`), "fine by me"))
	// form-js validates a typed field after a pause; its error going
	// moves the fields below up.
	b.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card+` .fjs-form-field-textfield.fjs-has-errors`))
	b.click(card + ` .fjs-form-field-radio label[for$="f_decision-0"]`) // Approve
	b.screenshot("tasks-form")
	b.click(card + ` .complete.schema button.primary`)
	// The engine completes it; the list reloads without it.
	confirm := open("then")
	b.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card))

	// The Camunda 7 generated form, on a wide screen: a number with a
	// minimum and a checkbox.
	b.run(chromedp.EmulateViewport(1280, 800))
	card = fmt.Sprintf(`article[data-task=%q]`, confirm.ID)
	b.waitText(card, "Confirm payment")
	began = time.Now()
	b.click(card + ` .actions button:last-child`)
	b.waitText(card+` .fjs-form`, "Amount paid")
	t.Logf("the second form drawn %v after the click", time.Since(began).Round(time.Millisecond))
	// "Complete…" again closes the form, and once more opens it afresh.
	b.click(card + ` .actions button:last-child`)
	b.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card+` .complete`))
	b.click(card + ` .actions button:last-child`)
	b.waitText(card+` .fjs-form`, "Amount paid")
	b.click(card + ` .complete.schema button.primary`) // 0 is under the minimum
	b.waitText(card+` .fjs-form`, "Field must have minimum value of 1.")
	b.run(chromedp.SendKeys(chromedp.CSS(card+` .fjs-form-field-number input`), kb.End+kb.Backspace+"120"))
	b.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card+` .fjs-form-field-number.fjs-has-errors`))
	b.click(card + ` .fjs-form-field-checkbox input`)
	b.screenshot("tasks-form-camunda7")
	b.click(card + ` .complete.schema button.primary`)

	v, err := f.eng.Wait(tctx(t), "r1")
	if err != nil || v.Status != instance.Completed {
		t.Fatalf("r1: %+v %v", v, err)
	}
	want := map[string]any{"note": "fine by me", "decision": "approve", "paid": int64(120), "receipt": true}
	for k, w := range want {
		if got := v.Variables[k]; fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("variable %s = %v (%T), want %v", k, got, got, w)
		}
	}
}

// TestFirefoxTaskForm: the embedded form works in Firefox too: it shows
// the task's variables, marks a missing field, and completes the task
// with what was typed and clicked.
func TestFirefoxTaskForm(t *testing.T) {
	f, open := formsFixture(t)
	review := open("check")
	b := newFirefox(t, f.server(t))
	b.open("/tasks?user=alice")
	card := fmt.Sprintf(`article[data-task=%q]`, review.ID)
	b.waitText(card, "Review order")
	b.click(card + ` .actions button:last-child`) // Complete…
	b.waitText(card+` .fjs-form`, "Review the order")
	b.waitJS(fmt.Sprintf(`document.querySelector(%q).value === "120"`, card+` .fjs-form-field-number input`))
	b.click(card + ` .complete.schema button.primary`)
	b.waitText(card+` .fjs-form`, "Field is required.")
	b.typeInto(card+` .fjs-form-field-textfield input`, "ok in firefox")
	b.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card+` .fjs-form-field-textfield.fjs-has-errors`))
	b.click(card + ` .fjs-form-field-radio label[for$="f_decision-1"]`) // Reject
	b.click(card + ` .complete.schema button.primary`)
	open("then")
	v, err := f.eng.Instance(tctx(t), "r1")
	if err != nil || v.Variables["note"] != "ok in firefox" || v.Variables["decision"] != "reject" {
		t.Fatalf("r1 after the form in firefox: %+v %v", v, err)
	}
}
