package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// orderListeners is a Camunda 7 model with execution listeners as the
// Modeler writes them: the process's start listener stamps the order, the
// external task's start listener (a JavaScript file of the deployment)
// prices it before the job is queued, so the worker sees the price; its
// end listener counts; the flow out of it logs as it is taken; the end
// event's listener refuses an order without an approval.
const orderListeners = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="order-listeners" isExecutable="true">
    <bpmn:extensionElements>
      <camunda:executionListener event="start" expression="${execution.setVariable(&quot;stamp&quot;, &quot;order-&quot; + orderId)}"/>
    </bpmn:extensionElements>
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="ship" camunda:type="external" camunda:topic="shipping">
      <bpmn:extensionElements>
        <camunda:executionListener event="start">
          <camunda:script scriptFormat="javascript" resource="deployment://price.js"/>
        </camunda:executionListener>
        <camunda:executionListener event="end" expression="${execution.setVariable('shipped', shipped + 1)}"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="e">
      <bpmn:extensionElements>
        <camunda:executionListener event="start">
          <camunda:script scriptFormat="javascript">if (!execution.getVariable("approved")) { throw new Error("order " + stamp + " is not approved"); }</camunda:script>
        </camunda:executionListener>
      </bpmn:extensionElements>
    </bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="ship"/>
    <bpmn:sequenceFlow id="f2" sourceRef="ship" targetRef="e">
      <bpmn:extensionElements>
        <camunda:executionListener>
          <camunda:script scriptFormat="groovy">execution.setVariable("route", "f2")</camunda:script>
        </camunda:executionListener>
      </bpmn:extensionElements>
    </bpmn:sequenceFlow>
  </bpmn:process>
</bpmn:definitions>`

// Camunda 7 execution listeners run end to end: what a start listener
// sets reaches the external task's job, the end and take listeners write
// as the task completes, and a listener that throws is an incident at its
// element that a retry, once the data is fixed, gets past.
func TestCamundaExecutionListenersRun(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	eng := enginetest.Open(t, env.Conn, withSync(env, engine.Options{}))
	price := `execution.setVariable("price", S(itemsJson).elements().length * 10)`
	if _, err := eng.DeployResources(bounded(t), engine.Resource{Name: "order.bpmn", XML: []byte(orderListeners)},
		engine.Resource{Name: "price.js", XML: []byte(price)}); err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"orderId": "o-7", "itemsJson": `[{"sku": "a"}, {"sku": "b"}]`, "shipped": 0, "approved": false}
	if _, err := eng.Start(bounded(t), "order-listeners", vars, engine.InstanceID("o-7")); err != nil {
		t.Fatal(err)
	}
	w := newRawWorker(t, env, "shipping")
	m, job := w.fetch()
	if job.Input["price"] != 20.0 || job.Input["stamp"] != "order-o-7" {
		t.Fatalf("the job's input %v lacks what the listeners set", job.Input)
	}
	if v := w.report(m, job, jobs.Report{Kind: jobs.Complete}); !v.Accepted {
		t.Fatalf("complete refused: %+v", v)
	}
	v := awaitView(t, eng, "o-7", "an incident at the end event", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
	if inc := v.Incidents[0]; inc.Node != "e" || !strings.Contains(inc.Cause, "start execution listener 1") || !strings.Contains(inc.Cause, "order order-o-7 is not approved") {
		t.Fatalf("incident %+v", inc)
	}
	if v.Variables["shipped"] != int64(1) || v.Variables["route"] != "f2" {
		t.Fatalf("variables %v: want the end and take listeners' writes", v.Variables)
	}
	if _, err := eng.SetVariables(bounded(t), "o-7", map[string]any{"approved": true}); err != nil {
		t.Fatal(err)
	}
	if err := eng.RetryIncident(bounded(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "o-7"); v.Status != instance.Completed || v.Variables["shipped"] != int64(1) {
		t.Fatalf("o-7: %s %v", v.Status, v.Variables)
	}
}

// reviewListeners is a Camunda 7 user task with task listeners: create
// routes large orders to the boss, assignment refuses one user, complete
// refuses a completion without a decision and records who decided.
const reviewListeners = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="review-listeners" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="review" name="Review" camunda:candidateGroups="sales">
      <bpmn:extensionElements>
        <camunda:taskListener event="create" expression="${task.setAssignee(amount &gt; 500 ? 'boss' : null)}"/>
        <camunda:taskListener event="create" expression="${task.setPriority(amount &gt; 500 ? 90 : 50)}"/>
        <camunda:taskListener event="assignment">
          <camunda:script scriptFormat="javascript">if (task.getAssignee() === "mallory") { throw new Error("mallory may not review"); }</camunda:script>
        </camunda:taskListener>
        <camunda:taskListener event="complete">
          <camunda:script scriptFormat="javascript">if (!execution.hasVariable("decision")) { throw new Error("decide first"); }
execution.setVariable("decidedBy", task.getAssignee());</camunda:script>
        </camunda:taskListener>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="review"/>
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// Camunda 7 task listeners run end to end through the task API: a create
// listener assigns and prioritises the task before it is listed; a
// command whose listener throws is refused with the listener's error and
// changes nothing; a complete listener writes as the task completes.
func TestCamundaTaskListenersRun(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	eng := enginetest.Open(t, env.Conn, withSync(env, engine.Options{}))
	if _, err := eng.DeployXML(bounded(t), strings.NewReader(reviewListeners)); err != nil {
		t.Fatal(err)
	}
	startTask(t, eng, "review-listeners", "r-1", map[string]any{"amount": 900})
	id := taskAt(t, eng, "r-1", "review")
	rec, err := eng.Task(bounded(t), id)
	if err != nil || rec.Assignee != "boss" || rec.Priority != 90 {
		t.Fatalf("created task %+v, %v: want the create listeners' assignee and priority", rec, err)
	}
	if _, err := eng.AssignTask(bounded(t), id, "mallory"); err == nil || !strings.Contains(err.Error(), "mallory may not review") {
		t.Fatalf("assign to mallory: %v", err)
	}
	if rec, err := eng.Task(bounded(t), id); err != nil || rec.Assignee != "boss" {
		t.Fatalf("after the refused assign: %+v, %v", rec, err)
	}
	if _, err := eng.CompleteTask(bounded(t), id, "boss", nil); err == nil || !strings.Contains(err.Error(), "decide first") {
		t.Fatalf("complete without a decision: %v", err)
	}
	if _, err := eng.CompleteTask(bounded(t), id, "boss", map[string]any{"decision": "approve"}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "r-1"); v.Status != instance.Completed || v.Variables["decidedBy"] != "boss" || v.Variables["decision"] != "approve" {
		t.Fatalf("r-1: %s %v", v.Status, v.Variables)
	}
}

// reviewTimeouts is a Camunda 7 user task with timeout task listeners as
// the Modeler writes them: "nag" raises the task's priority on a cycle,
// "escalate" hands it to the boss once, and fails until the boss is known.
const reviewTimeouts = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d">
  <bpmn:process id="review-timeouts" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="review" name="Review">
      <bpmn:extensionElements>
        <camunda:taskListener event="timeout" id="nag">
          <camunda:script scriptFormat="javascript">task.setPriority(task.getPriority() + 10); execution.setVariable("nags", nags + 1);</camunda:script>
          <bpmn:timerEventDefinition id="TimerEventDefinition_1"><bpmn:timeCycle xsi:type="bpmn:tFormalExpression">R2/PT0.1S</bpmn:timeCycle></bpmn:timerEventDefinition>
        </camunda:taskListener>
        <camunda:taskListener event="timeout" id="escalate">
          <camunda:script scriptFormat="javascript">if (!execution.hasVariable("boss")) { throw new Error("who is the boss?"); }
task.setAssignee(execution.getVariable("boss"));</camunda:script>
          <bpmn:timerEventDefinition id="TimerEventDefinition_2"><bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT0.3S</bpmn:timeDuration></bpmn:timerEventDefinition>
        </camunda:taskListener>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="review"/>
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// Camunda 7 timeout task listeners run end to end: the nag's cycle raises
// the open task's priority twice; the escalation fails into an incident
// at the task while the task stays open, and a retry once the boss is
// known assigns it; the task then completes as any.
func TestCamundaTimeoutListenersRun(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	eng := enginetest.Open(t, env.Conn, withSync(env, engine.Options{}))
	if _, err := eng.DeployXML(bounded(t), strings.NewReader(reviewTimeouts)); err != nil {
		t.Fatal(err)
	}
	startTask(t, eng, "review-timeouts", "rt-1", map[string]any{"nags": 0})
	id := taskAt(t, eng, "rt-1", "review")
	v := awaitView(t, eng, "rt-1", "nagged twice and escalated", func(v *engine.InstanceView) bool {
		return v.Variables["nags"] == int64(2) && len(v.Incidents) == 1
	})
	if inc := v.Incidents[0]; inc.Node != "review" || !strings.Contains(inc.Cause, `timeout task listener "escalate"`) || !strings.Contains(inc.Cause, "who is the boss?") {
		t.Fatalf("incident %+v", inc)
	}
	// The task's record is written after the checkpoint the view shows.
	awaitTask(t, eng, id, "nagged twice, not escalated", func(rec *instance.Task) bool {
		return !rec.State.Finished() && rec.Priority == instance.DefaultTaskPriority+20 && rec.Assignee == ""
	})
	if _, err := eng.SetVariables(bounded(t), "rt-1", map[string]any{"boss": "ada"}); err != nil {
		t.Fatal(err)
	}
	if err := eng.RetryIncident(bounded(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	awaitView(t, eng, "rt-1", "past the incident", func(v *engine.InstanceView) bool { return len(v.Incidents) == 0 })
	awaitTask(t, eng, id, "escalated to ada", func(rec *instance.Task) bool { return rec.Assignee == "ada" && !rec.State.Finished() })
	if _, err := eng.CompleteTask(bounded(t), id, "ada", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "rt-1"); v.Status != instance.Completed || v.Variables["nags"] != int64(2) {
		t.Fatalf("rt-1: %s %v", v.Status, v.Variables)
	}
}

// awaitTask waits until task id's record satisfies cond.
func awaitTask(t *testing.T, eng *engine.Engine, id, what string, cond func(*instance.Task) bool) {
	t.Helper()
	testwait.Until(t, 20*time.Second, "task "+id+" "+what, func() error {
		rec, err := eng.Task(bounded(t), id)
		if err != nil {
			return err
		}
		if !cond(rec) {
			return fmt.Errorf("record %+v", rec)
		}
		return nil
	})
}
