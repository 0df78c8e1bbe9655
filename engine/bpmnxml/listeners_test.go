package bpmnxml

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

func TestCamundaExecutionListeners(t *testing.T) {
	src := doc(`<bpmn:process id="p" isExecutable="true">
<bpmn:extensionElements>
  <camunda:executionListener event="start" expression="${execution.setVariable('begun', true)}"/>
  <camunda:executionListener event="end"><camunda:script scriptFormat="javascript" resource="deployment://audit.js"/></camunda:executionListener>
</bpmn:extensionElements>
<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t">
  <bpmn:extensionElements><camunda:executionListener expression="${execution.setVariableLocal(&quot;hops&quot;, hops + 1)}"/></bpmn:extensionElements>
</bpmn:sequenceFlow>
<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:executionListener event="start"><camunda:script scriptFormat="groovy">execution.setVariable("a", 1); execution.setVariable("b", "two")</camunda:script></camunda:executionListener>
  <camunda:executionListener event="end" expression="${a > 0}"/>
  <camunda:executionListener event="end"><camunda:script scriptFormat="javascript">execution.setVariable("sum", a + 1)</camunda:script></camunda:executionListener>
</bpmn:extensionElements></bpmn:task>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
<bpmn:endEvent id="e"/>
</bpmn:process>`)
	ps, err := ParseIn(strings.NewReader(src), Resources{"audit.js": []byte(`execution.setVariable("audited", true)`)})
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	check := func(what string, got []model.Listener, want ...model.Listener) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d listeners %+v, want %d", what, len(got), got, len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.Event != w.Event || g.Set != w.Set || g.Local != w.Local || g.Source != w.Source || g.Language != w.Language {
				t.Errorf("%s listener %d = %+v, want %+v", what, i+1, g, w)
			}
			if (g.Language == "javascript") != (g.Program() != nil) || (g.Language == "") != (g.Compiled() != nil) {
				t.Errorf("%s listener %d is not compiled as its language says: %+v", what, i+1, g)
			}
		}
	}
	check("process", p.Listeners,
		model.Listener{Event: "start", Set: "begun", Source: "${true}"},
		model.Listener{Event: "end", Source: `execution.setVariable("audited", true)`, Language: "javascript"})
	check("flow f1", p.Flow("f1").Listeners, model.Listener{Event: "take", Set: "hops", Local: true, Source: "${hops + 1}"})
	check("task t", node(t, p, "t").Listeners,
		model.Listener{Event: "start", Set: "a", Source: "1"},
		model.Listener{Event: "start", Set: "b", Source: `"two"`},
		model.Listener{Event: "end", Source: "${a > 0}"},
		model.Listener{Event: "end", Source: `execution.setVariable("sum", a + 1)`, Language: "javascript"})
}

func TestCamundaExecutionListenerErrors(t *testing.T) {
	for _, c := range []struct{ name, listener, want string }{
		{"a bean's method", `<camunda:executionListener event="start" expression="${logger.info('x')}"/>`,
			`execution listener 1 (start): expression "${logger.info('x')}": unsupported JUEL method call "logger.info(...)"`},
		{"JavaScript that does not compile", `<camunda:executionListener event="end"><camunda:script scriptFormat="javascript">var = ;</camunda:script></camunda:executionListener>`,
			`execution listener 1 (end): script "t/listener-1" line 1:5: SyntaxError`},
		{"not a variable name", `<camunda:executionListener event="end" expression="${execution.setVariable('a b', 1)}"/>`,
			`execution listener expression "${execution.setVariable('a b', 1)}": the calls jetbpm runs here are ${execution.setVariable("name", value)}`},
		{"a missing resource", `<camunda:executionListener event="end"><camunda:script scriptFormat="javascript" resource="deployment://none.js"/></camunda:executionListener>`,
			`no file "none.js" in this deployment`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := parseErr(t, around(`<bpmn:task id="t"><bpmn:extensionElements>`+c.listener+`</bpmn:extensionElements></bpmn:task>`))
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"t"`) {
				t.Errorf("error %q, want it to name the element and say %q", err, c.want)
			}
		})
	}
}

func TestCamundaTaskListeners(t *testing.T) {
	p := mustParse(t, around(`<bpmn:userTask id="t" camunda:candidateGroups="sales"><bpmn:extensionElements>
  <camunda:taskListener event="create" expression="${task.setAssignee(amount > 500 ? 'boss' : null)}"/>
  <camunda:taskListener event="create" expression="${task.setPriority(80)}"/>
  <camunda:taskListener event="assignment" expression="${task.setVariable('assignedTo', task.assignee)}"/>
  <camunda:taskListener event="update"><camunda:script scriptFormat="javascript">task.addCandidateUser("ada")</camunda:script></camunda:taskListener>
  <camunda:taskListener event="complete" expression="${execution.setVariableLocal('done', true)}"/>
</bpmn:extensionElements></bpmn:userTask>`))
	n := node(t, p, "t")
	want := []model.Listener{
		{Event: "create", Field: "assignee", Source: "${amount > 500 ? 'boss' : null}"},
		{Event: "create", Field: "priority", Source: "${80}"},
		{Event: "assignment", Set: "assignedTo", Source: "${task.assignee}"},
		{Event: "update", Source: `task.addCandidateUser("ada")`, Language: "javascript"},
		{Event: "complete", Set: "done", Local: true, Source: "${true}"},
	}
	if len(n.TaskListeners) != len(want) || len(n.Listeners) != 0 {
		t.Fatalf("task listeners %+v, execution listeners %+v", n.TaskListeners, n.Listeners)
	}
	for i, w := range want {
		g := n.TaskListeners[i]
		if g.Event != w.Event || g.Field != w.Field || g.Set != w.Set || g.Local != w.Local || g.Source != w.Source || g.Language != w.Language {
			t.Errorf("task listener %d = %+v, want %+v", i+1, g, w)
		}
	}
}

// A timeout task listener (Camunda 7.15+) carries its timer inside it: a
// duration, a date or a cycle, literal or an expression; its id names it.
func TestCamundaTimeoutTaskListeners(t *testing.T) {
	p := mustParse(t, around(`<bpmn:userTask id="t"><bpmn:extensionElements>
  <camunda:taskListener event="timeout" id="remind" expression="${task.setPriority(90)}">
    <bpmn:timerEventDefinition id="TimerEventDefinition_1"><bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT1H</bpmn:timeDuration></bpmn:timerEventDefinition>
  </camunda:taskListener>
  <camunda:taskListener event="timeout">
    <camunda:script scriptFormat="javascript">execution.setVariable("nagged", true)</camunda:script>
    <bpmn:timerEventDefinition><bpmn:timeCycle>R3/PT10M</bpmn:timeCycle></bpmn:timerEventDefinition>
  </camunda:taskListener>
  <camunda:taskListener event="timeout" expression="${execution.setVariable('late', true)}">
    <bpmn:timerEventDefinition><bpmn:timeDate>${deadline}</bpmn:timeDate></bpmn:timerEventDefinition>
  </camunda:taskListener>
</bpmn:extensionElements></bpmn:userTask>`))
	ls := node(t, p, "t").TaskListeners
	if len(ls) != 3 {
		t.Fatalf("task listeners %+v, want 3", ls)
	}
	want := []struct {
		id, field, set string
		timer          model.Timer
	}{
		{"remind", "priority", "", model.Timer{Type: model.TimerDuration, Value: "PT1H"}},
		{"", "", "", model.Timer{Type: model.TimerCycle, Value: "R3/PT10M", Quartz: true}},
		{"", "", "late", model.Timer{Type: model.TimerDate, Expr: "${deadline}"}},
	}
	for i, w := range want {
		g := ls[i]
		if g.Event != model.ListenTimeout || g.ID != w.id || g.Field != w.field || g.Set != w.set || g.Timer == nil ||
			g.Timer.Type != w.timer.Type || g.Timer.Value != w.timer.Value || g.Timer.Expr != w.timer.Expr || g.Timer.Quartz != w.timer.Quartz {
			t.Errorf("timeout listener %d = %+v (timer %+v), want %+v", i+1, g, g.Timer, w)
		}
	}
	if ls[1].Language != "javascript" || ls[1].Name(1) != "2" || ls[0].Name(0) != `"remind"` {
		t.Errorf("listener 2 %+v; names %s, %s", ls[1], ls[0].Name(0), ls[1].Name(1))
	}
	bad := around(`<bpmn:userTask id="t"><bpmn:extensionElements>
  <camunda:taskListener event="timeout" expression="${x}">
  <bpmn:timerEventDefinition><bpmn:timeDuration>soon</bpmn:timeDuration></bpmn:timerEventDefinition></camunda:taskListener>
</bpmn:extensionElements></bpmn:userTask>`)
	if err := parseErr(t, bad); !strings.Contains(err.Error(), fmt.Sprintf(`element "t" (line %d): userTask: task listener 1 (timeout): duration "soon" is not ISO-8601`, lineOf(t, bad, "<bpmn:userTask"))) {
		t.Errorf("a bad duration: %v", err)
	}
}

// A REST connector task as Camunda 8's element template writes it: its
// type, nested input targets, and headers; retryBackoff makes the task's
// retry policy a fixed delay over its retries.
func TestRESTConnectorTemplate(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t" zeebe:modelerTemplate="io.camunda.connectors.HttpJson.v2"><bpmn:extensionElements>
  <zeebe:taskDefinition type="io.camunda:http-json:1" retries="2"/>
  <zeebe:ioMapping>
    <zeebe:input source="bearer" target="authentication.type"/>
    <zeebe:input source="=token" target="authentication.token"/>
    <zeebe:input source="POST" target="method"/>
    <zeebe:input source="=baseUrl + &quot;/orders&quot;" target="url"/>
    <zeebe:input source="={id: orderId}" target="body"/>
  </zeebe:ioMapping>
  <zeebe:taskHeaders>
    <zeebe:header key="resultExpression" value="={orderStatus: response.body.status}"/>
    <zeebe:header key="errorExpression" value="=if error.code = &quot;409&quot; then bpmnError(&quot;CONFLICT&quot;, error.message) else null"/>
    <zeebe:header key="retryBackoff" value="PT2S"/>
  </zeebe:taskHeaders>
</bpmn:extensionElements></bpmn:serviceTask>`))
	n := node(t, p, "t")
	w := n.Service.Worker
	if w.Topic != "io.camunda:http-json:1" || w.Headers["retryBackoff"] != "PT2S" || len(n.Inputs) != 5 || n.Inputs[0].Target != "authentication.type" {
		t.Fatalf("worker %+v, inputs %+v", w, n.Inputs)
	}
	if r := w.Overrides().Retry; r == nil || r.Kind != jobs.RetryFixed || r.MaxAttempts != 2 || r.Delay != 2*time.Second {
		t.Errorf("retry policy %+v, want fixed, 2 attempts, 2s apart", r)
	}
	src := around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="io.camunda:http-json:1"/>
  <zeebe:taskHeaders><zeebe:header key="retryBackoff" value="soon"/></zeebe:taskHeaders></bpmn:extensionElements></bpmn:serviceTask>`)
	if err := parseErr(t, src); !strings.Contains(err.Error(), `zeebe:header retryBackoff="soon"`) {
		t.Errorf("a bad retryBackoff: %v", err)
	}
}

// Zeebe's execution listeners are the node's job listeners, in order;
// where Zeebe runs none, the deploy is refused naming the listener.
func TestZeebeExecutionListeners(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="work"/>
  <zeebe:executionListeners>
    <zeebe:executionListener eventType="start" type="prep" retries="5"/>
    <zeebe:executionListener eventType="end" type="=&quot;audit&quot;"/>
    <zeebe:executionListener eventType="start" type="check" retries="=2"/>
  </zeebe:executionListeners>
</bpmn:extensionElements></bpmn:serviceTask>`))
	got := node(t, p, "t").JobListeners
	want := []model.JobListener{{Event: "start", Type: "prep", Retries: 5}, {Event: "end", Type: "audit"}, {Event: "start", Type: "check", Retries: 2}}
	if len(got) != len(want) {
		t.Fatalf("job listeners %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Event != want[i].Event || got[i].Type != want[i].Type || got[i].Retries != want[i].Retries {
			t.Errorf("job listener %d %+v, want %+v", i+1, got[i], want[i])
		}
	}
	p = mustParse(t, around(`<bpmn:task id="t"><bpmn:extensionElements><zeebe:executionListeners>
  <zeebe:executionListener eventType="end" type="=&quot;audit-&quot; + region" retries="=maxTries"/></zeebe:executionListeners></bpmn:extensionElements></bpmn:task>`))
	if l := node(t, p, "t").JobListeners[0]; l.TypeExpr != `="audit-" + region` || l.Type != "" || l.TypeCompiled() == nil ||
		l.RetriesExpr != "=maxTries" || l.RetriesCompiled() == nil {
		t.Errorf("type and retries expressions: %+v", l)
	}
	p = mustParse(t, doc(`<bpmn:process id="p" isExecutable="true">
<bpmn:extensionElements><zeebe:executionListeners>
  <zeebe:executionListener eventType="start" type="open"/><zeebe:executionListener eventType="end" type="close" retries="1"/>
</zeebe:executionListeners></bpmn:extensionElements>
<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/><bpmn:endEvent id="e"/>
</bpmn:process>`))
	if ls := p.JobListeners; len(ls) != 2 || ls[0].Type != "open" || ls[0].Event != "start" || ls[1].Type != "close" || ls[1].Retries != 1 {
		t.Errorf("process listeners %+v", ls)
	}
	for _, c := range []struct{ src, want string }{
		{`<bpmn:startEvent id="t"><bpmn:extensionElements><zeebe:executionListeners><zeebe:executionListener eventType="start" type="x"/></zeebe:executionListeners></bpmn:extensionElements></bpmn:startEvent>`,
			`execution listener 1 (start, type "x"): Zeebe runs no start listener on a start or boundary event`},
		{`<bpmn:task id="t"><bpmn:extensionElements><zeebe:executionListeners><zeebe:executionListener eventType="start" type="x" retries="0"/></zeebe:executionListeners></bpmn:extensionElements></bpmn:task>`,
			`retries "0" must be a positive integer`},
		{`<bpmn:task id="t"><bpmn:extensionElements><zeebe:executionListeners><zeebe:executionListener eventType="start"/></zeebe:executionListeners></bpmn:extensionElements></bpmn:task>`,
			"has no type"},
		{`<bpmn:task id="t"><bpmn:extensionElements><zeebe:executionListeners><zeebe:executionListener eventType="start" type="=kind +"/></zeebe:executionListeners></bpmn:extensionElements></bpmn:task>`,
			`listener type: expression "=kind +": missing operand`},
	} {
		if err := parseErr(t, around(c.src)); !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}
