package rest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
)

const listenedBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="listened" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="review"/>
    <bpmn:userTask id="review">
      <bpmn:extensionElements>
        <zeebe:userTask/>
        <zeebe:taskListeners>
          <zeebe:taskListener eventType="completing" type="review-check"/>
        </zeebe:taskListeners>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`

// A Zeebe task listener over /v2: the completion waits for the
// listener's job, which a worker activates (kind TASK_LISTENER, event
// COMPLETING) and completes with a result: denied, the completion is
// refused with the reason (409); accepted with a correction, the task
// completes.
func TestRESTTaskListener(t *testing.T) {
	f := setup(t)
	if _, err := f.eng.DeployXML(ctxT(t), strings.NewReader(listenedBPMN)); err != nil {
		t.Fatal(err)
	}
	code, inst := f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "listened"})
	want(t, "create", code, inst, http.StatusOK, "")
	var tk string
	testwait.True(t, 10*time.Second, "the review's user task listed", func() bool {
		code, out := f.call(t, "POST", "/user-tasks/search", map[string]any{"filter": map[string]any{"processInstanceKey": inst["processInstanceKey"]}})
		if ts := items(t, out); code == http.StatusOK && len(ts) == 1 {
			tk = ts[0]["userTaskKey"].(string)
			return true
		}
		return false
	})

	type answer struct {
		code int
		out  map[string]any
	}
	complete := func() chan answer {
		ch := make(chan answer, 1)
		go func() {
			code, out := f.call(t, "POST", "/user-tasks/"+tk+"/completion", map[string]any{"variables": map[string]any{"ok": true}})
			ch <- answer{code, out}
		}()
		return ch
	}
	listenerJob := func() map[string]any {
		code, out := f.call(t, "POST", "/jobs/activation", map[string]any{"type": "review-check", "worker": "w", "timeout": 30000,
			"maxJobsToActivate": 1, "requestTimeout": 10000})
		want(t, "activate", code, out, http.StatusOK, "")
		js, _ := out["jobs"].([]any)
		if len(js) != 1 {
			t.Fatalf("activated %v", out)
		}
		j := js[0].(map[string]any)
		if j["kind"] != "TASK_LISTENER" || j["listenerEventType"] != "COMPLETING" || j["customHeaders"].(map[string]any)["io.camunda.zeebe:userTaskKey"] == nil {
			t.Fatalf("listener job %v", j)
		}
		return j
	}
	wait := func(ch chan answer) answer {
		select {
		case a := <-ch:
			return a
		case <-time.After(30 * time.Second):
			t.Fatal("the completion did not answer")
			return answer{}
		}
	}

	first := complete()
	j := listenerJob()
	code, out := f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", map[string]any{"result": map[string]any{"type": "userTask", "denied": true, "deniedReason": "not signed"}})
	want(t, "deny", code, out, http.StatusNoContent, "")
	a := wait(first)
	want(t, "denied completion", a.code, a.out, http.StatusConflict, "denied it: not signed")

	code, out = f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", map[string]any{"result": map[string]any{"type": "adHocSubProcess"}})
	want(t, "another result type", code, out, http.StatusNotImplemented, "adHocSubProcess")

	second := complete()
	j = listenerJob()
	code, out = f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", map[string]any{"result": map[string]any{"corrections": map[string]any{"priority": 101}}})
	want(t, "a bad correction", code, out, http.StatusBadRequest, "priority 101")
	code, out = f.call(t, "POST", "/jobs/"+j["jobKey"].(string)+"/completion", map[string]any{"result": map[string]any{"corrections": map[string]any{"priority": 90}}})
	want(t, "accept", code, out, http.StatusNoContent, "")
	a = wait(second)
	want(t, "completion", a.code, a.out, http.StatusNoContent, "")
	if v, err := f.eng.Wait(ctxT(t), inst["processInstanceKey"].(string)); err != nil || v.Variables["ok"] != true {
		t.Fatalf("instance %+v (%v)", v, err)
	}
}
