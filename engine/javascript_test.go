package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// loanJS is a Camunda 7 model whose script tasks are JavaScript, as the
// Modeler writes them: one scores the application with Camunda's
// execution facade and Spin, the other never ends.
const loanJS = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="Camunda Platform" id="d">
  <bpmn:process id="loan-js" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:scriptTask id="score" scriptFormat="javascript" camunda:resultVariable="approved">
      <bpmn:script><![CDATA[var application = S(applicationJson);
var debts = 0;
application.prop("debts").elements().forEach(function (d) { debts += d.prop("amount").numberValue(); });
execution.setVariable("debts", debts);
execution.setVariable("score", income - debts);
income - debts > 1000]]></bpmn:script>
    </bpmn:scriptTask>
    <bpmn:exclusiveGateway id="ok" default="no"/>
    <bpmn:scriptTask id="spin" scriptFormat="JavaScript"><bpmn:script>while (true) {}</bpmn:script></bpmn:scriptTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="score"/>
    <bpmn:sequenceFlow id="f2" sourceRef="score" targetRef="ok"/>
    <bpmn:sequenceFlow id="yes" sourceRef="ok" targetRef="e"><bpmn:conditionExpression language="javascript">approved &amp;&amp; execution.getVariable("score") &gt; 1000</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="no" sourceRef="ok" targetRef="spin"/>
    <bpmn:sequenceFlow id="f3" sourceRef="spin" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// A JavaScript script task runs end to end: its variables and its result
// are the instance's, a JavaScript condition picks the gateway's flow; a runaway script is an incident at its time limit,
// and every other instance of the partition goes on.
func TestJavaScriptScriptTasks(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	eng := enginetest.Open(t, env.Conn, withSync(env, engine.Options{ScriptTimeout: 200 * time.Millisecond}))
	if _, err := eng.DeployXML(bounded(t), strings.NewReader(loanJS)); err != nil {
		t.Fatal(err)
	}
	app := `{"debts": [{"amount": 300}, {"amount": 200}]}`
	if _, err := eng.Start(bounded(t), "loan-js", map[string]any{"income": 2000, "applicationJson": app}, engine.InstanceID("rich")); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(bounded(t), "loan-js", map[string]any{"income": 600, "applicationJson": app}, engine.InstanceID("poor")); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(bounded(t), "loan-js", map[string]any{"income": 5000, "applicationJson": `{"debts": []}`}, engine.InstanceID("richer")); err != nil {
		t.Fatal(err)
	}
	for id, score := range map[string]int64{"rich": 1500, "richer": 5000} {
		v := waitDone(t, eng, id)
		if v.Status != instance.Completed || v.Variables["approved"] != true || v.Variables["score"] != score {
			t.Errorf("%s: %s %v", id, v.Status, v.Variables)
		}
	}
	v := awaitView(t, eng, "poor", "an incident at spin", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
	if inc := v.Incidents[0]; inc.Node != "spin" || !strings.Contains(inc.Cause, `script "spin": ran over its 200ms time limit`) {
		t.Fatalf("incident %+v", inc)
	}
	if v.Variables["approved"] != false || v.Variables["debts"] != int64(500) {
		t.Errorf("poor: %v", v.Variables)
	}
}

// A script task loads its JavaScript from a file deployed beside the
// BPMN (camunda:resource="deployment://score.js"); a deploy without that
// file is refused naming it.
func TestJavaScriptFromADeploymentResource(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, withSync(env, engine.Options{}))
	bpmn := `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="res-js" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:scriptTask id="score" scriptFormat="javascript" camunda:resource="deployment://score.js" camunda:resultVariable="score"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="score"/>
    <bpmn:sequenceFlow id="f2" sourceRef="score" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`
	_, err := eng.DeployResources(bounded(t), engine.Resource{Name: "res.bpmn", XML: []byte(bpmn)})
	if err == nil || !strings.Contains(err.Error(), `no file "score.js" in this deployment`) {
		t.Fatalf("deploy without the script: %v", err)
	}
	if _, err := eng.DeployResources(bounded(t), engine.Resource{Name: "res.bpmn", XML: []byte(bpmn)},
		engine.Resource{Name: "score.js", XML: []byte("// scores\nincome * 2 - debts\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(bounded(t), "res-js", map[string]any{"income": 100, "debts": 50}, engine.InstanceID("r1")); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "r1"); v.Status != instance.Completed || v.Variables["score"] != int64(150) {
		t.Fatalf("r1: %s %v", v.Status, v.Variables)
	}
}
