package bpmnxml

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/expression"
)

// Camunda 7's http-connector is a job on HTTPConnectorTopic: the
// connector's inputs after the task's own, its outputs before them, the
// results kept to the task.
func TestCamundaHTTPConnector(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <camunda:inputOutput>
    <camunda:inputParameter name="base">https://api.test</camunda:inputParameter>
    <camunda:outputParameter name="done">${true}</camunda:outputParameter>
  </camunda:inputOutput>
  <camunda:connector>
    <camunda:inputOutput>
      <camunda:inputParameter name="url">${base}/orders</camunda:inputParameter>
      <camunda:inputParameter name="method">POST</camunda:inputParameter>
      <camunda:inputParameter name="headers">
        <camunda:map>
          <camunda:entry key="Content-Type">application/json</camunda:entry>
          <camunda:entry key="X-Order">${orderId}</camunda:entry>
          <camunda:entry key="tags"><camunda:list><camunda:value>a</camunda:value><camunda:value>${tag}</camunda:value></camunda:list></camunda:entry>
        </camunda:map>
      </camunda:inputParameter>
      <camunda:inputParameter name="payload">${payload}</camunda:inputParameter>
      <camunda:outputParameter name="status">${statusCode}</camunda:outputParameter>
    </camunda:inputOutput>
    <camunda:connectorId>http-connector</camunda:connectorId>
  </camunda:connector>
</bpmn:extensionElements></bpmn:serviceTask>`))
	n := node(t, p, "t")
	w := n.Service.Worker
	if w == nil || w.Topic != HTTPConnectorTopic || !w.ResultsLocal {
		t.Fatalf("worker %+v", w)
	}
	var ins []string
	for _, m := range n.Inputs {
		ins = append(ins, m.Target)
	}
	if strings.Join(ins, ",") != "base,url,method,headers,payload" {
		t.Errorf("inputs %v", ins)
	}
	if len(n.Outputs) != 2 || n.Outputs[0].Target != "status" || n.Outputs[1].Target != "done" {
		t.Errorf("outputs %+v", n.Outputs)
	}
	e, err := expression.Compile(n.Inputs[3].Source)
	if err != nil {
		t.Fatalf("headers %q: %v", n.Inputs[3].Source, err)
	}
	v, err := e.Eval(map[string]any{"orderId": "o-1", "tag": "b"})
	h, _ := v.(map[string]any)
	tags, _ := h["tags"].([]any)
	if err != nil || h["Content-Type"] != "application/json" || h["X-Order"] != "o-1" || len(tags) != 2 || tags[1] != "b" {
		t.Errorf("headers = %v (%v)", v, err)
	}
}

func TestCamundaConnectorRefusals(t *testing.T) {
	for _, c := range []struct{ task, want string }{
		{`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="x"><bpmn:extensionElements>
  <camunda:connector><camunda:connectorId>http-connector</camunda:connectorId></camunda:connector></bpmn:extensionElements></bpmn:serviceTask>`,
			"the serviceTask also runs a job (worker topic x); keep one"},
		{`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <camunda:connector><camunda:connectorId>soap-http-connector</camunda:connectorId></camunda:connector></bpmn:extensionElements></bpmn:serviceTask>`,
			`connectorId "soap-http-connector" is not supported (only http-connector`},
		{`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <camunda:connector><camunda:connectorId>http-connector</camunda:connectorId><camunda:field name="x"/></camunda:connector></bpmn:extensionElements></bpmn:serviceTask>`,
			"camunda:field: not supported inside camunda:connector"},
		{`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <camunda:connector><camunda:connectorId>http-connector</camunda:connectorId></camunda:connector>
  <camunda:connector><camunda:connectorId>http-connector</camunda:connectorId></camunda:connector></bpmn:extensionElements></bpmn:serviceTask>`,
			"appears twice; keep one"},
		{`<bpmn:userTask id="t"><bpmn:extensionElements>
  <camunda:connector><camunda:connectorId>http-connector</camunda:connectorId></camunda:connector></bpmn:extensionElements></bpmn:userTask>`,
			"applies to service tasks, send tasks and message throw events only"},
	} {
		err := parseErr(t, around(c.task))
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.task, err, c.want)
		}
	}
}
