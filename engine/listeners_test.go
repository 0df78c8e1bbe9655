package engine_test

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
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
