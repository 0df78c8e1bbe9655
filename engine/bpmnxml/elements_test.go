package bpmnxml

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

func TestCamundaExternalTask(t *testing.T) {
	src := around(`<bpmn:serviceTask id="t" name="Charge" camunda:type="external" camunda:topic="charge" camunda:asyncBefore="true" camunda:taskPriority="7"/>`)
	p := mustParse(t, src)
	n := node(t, p, "t")
	if n.Kind != model.ServiceTask || n.Name != "Charge" || !n.IsExternal() || n.Service.Worker.Topic != "charge" {
		t.Fatalf("node = %+v, service %+v", n, n.Service)
	}
	if n.Extensions["camunda:asyncBefore"] != "true" || n.Extensions["camunda:taskPriority"] != "7" {
		t.Errorf("extensions = %v", n.Extensions)
	}
	if want := lineOf(t, src, `<bpmn:serviceTask`); n.Line != want {
		t.Errorf("line = %d, want %d", n.Line, want)
	}
	if f := p.Flow("f2"); f == nil || f.Line != lineOf(t, src, `id="f2"`) {
		t.Errorf("flow f2 = %+v", f)
	}
}

func TestZeebeTaskDefinition(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="payment" retries="=3"/>
  <zeebe:taskHeaders><zeebe:header key="method" value="VISA"/><zeebe:header key="k2" value="v2"/></zeebe:taskHeaders>
</bpmn:extensionElements></bpmn:serviceTask>`))
	w := node(t, p, "t").Service.Worker
	if w == nil || w.Topic != "payment" || w.Retries != 3 || w.Headers["method"] != "VISA" || w.Headers["k2"] != "v2" {
		t.Fatalf("worker = %+v", w)
	}
	p = mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="= &quot;quoted&quot;"/></bpmn:extensionElements></bpmn:serviceTask>`))
	if w := node(t, p, "t").Service.Worker; w.Topic != "quoted" || w.Retries != 0 {
		t.Errorf("worker = %+v", w)
	}
	for _, bad := range []string{`type="x" retries="=n + 1"`, `type="x" retries="0"`} {
		err := parseErr(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition `+bad+`/></bpmn:extensionElements></bpmn:serviceTask>`))
		if e := importError(t, err); e.ID != "t" || !strings.Contains(e.Msg, "zeebe:taskDefinition") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestZeebeIOMapping(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="x"/>
  <zeebe:ioMapping>
    <zeebe:input source="= order.total" target="amount"/>
    <zeebe:input source="EUR" target="currency"/>
    <zeebe:output source="=result" target="paid"/>
  </zeebe:ioMapping>
</bpmn:extensionElements></bpmn:serviceTask>`))
	n := node(t, p, "t")
	want := []model.Mapping{{Target: "amount", Source: "= order.total"}, {Target: "currency", Source: expression.Literal("EUR")}}
	if len(n.Inputs) != 2 || n.Inputs[0].Target != want[0].Target || n.Inputs[0].Source != want[0].Source ||
		n.Inputs[1].Target != want[1].Target || n.Inputs[1].Source != want[1].Source {
		t.Errorf("inputs = %+v", n.Inputs)
	}
	if len(n.Outputs) != 1 || n.Outputs[0].Target != "paid" || n.Outputs[0].Source != "=result" {
		t.Errorf("outputs = %+v", n.Outputs)
	}
}

func TestCamundaInputOutput(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="x"><bpmn:extensionElements>
  <camunda:inputOutput>
    <camunda:inputParameter name="amount">${order.total}</camunda:inputParameter>
    <camunda:inputParameter name="currency">EUR</camunda:inputParameter>
    <camunda:inputParameter name="none"></camunda:inputParameter>
    <camunda:inputParameter name="sum"><camunda:script scriptFormat="FEEL">a + b</camunda:script></camunda:inputParameter>
    <camunda:outputParameter name="paid">${result}</camunda:outputParameter>
  </camunda:inputOutput>
</bpmn:extensionElements></bpmn:serviceTask>`))
	n := node(t, p, "t")
	got := map[string]string{}
	for _, m := range n.Inputs {
		got[m.Target] = m.Source
	}
	want := map[string]string{"amount": "${order.total}", "currency": expression.Literal("EUR"), "none": "nil", "sum": "=a + b"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("input %s = %q, want %q", k, got[k], v)
		}
	}
	if len(n.Outputs) != 1 || n.Outputs[0].Source != "${result}" {
		t.Errorf("outputs = %+v", n.Outputs)
	}

	for _, c := range []struct{ param, want string }{
		{`<camunda:script scriptFormat="groovy">x = 1</camunda:script>`, `"groovy" needs a JVM script engine`},
		{`<camunda:list><camunda:script scriptFormat="javascript">1</camunda:script></camunda:list>`, "not supported inside camunda:list (camunda:value only)"},
		{`<camunda:map><camunda:entry>a</camunda:entry></camunda:map>`, "has no key"},
		{`Hello ${name`, `missing closing "}"`},
	} {
		src := around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="x"><bpmn:extensionElements>
  <camunda:inputOutput>
    <camunda:inputParameter name="v">` + c.param + `</camunda:inputParameter>
  </camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>`)
		e := importError(t, parseErr(t, src))
		if e.ID != "t" || e.Element != "bpmn:serviceTask" || !strings.Contains(e.Msg, c.want) || e.Line != lineOf(t, src, "<camunda:inputParameter") && e.Line != lineOf(t, src, c.param) {
			t.Errorf("%s: %v", c.param, e)
		}
	}
}

// A JavaScript parameter is a program: its last value is the parameter's.
func TestCamundaJavaScriptParameter(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="x"><bpmn:extensionElements>
  <camunda:inputOutput>
    <camunda:inputParameter name="total"><camunda:script scriptFormat="javascript">var t = 0; items.forEach(function (i) { t += i; }); t</camunda:script></camunda:inputParameter>
  </camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>`))
	in := node(t, p, "t").Inputs
	if len(in) != 1 || in[0].Target != "total" || in[0].Language != "javascript" || in[0].Program() == nil {
		t.Fatalf("inputs %+v", in)
	}
}

func TestScriptTasks(t *testing.T) {
	p := mustParse(t, around(`<bpmn:scriptTask id="t"><bpmn:extensionElements><zeebe:script expression="=a+b" resultVariable="sum"/></bpmn:extensionElements></bpmn:scriptTask>`))
	if s := node(t, p, "t").Script; s == nil || s.Expression != "=a+b" || s.ResultVariable != "sum" {
		t.Errorf("zeebe script = %+v", s)
	}
	p = mustParse(t, around(`<bpmn:scriptTask id="t" scriptFormat="JUEL" camunda:resultVariable="sum"><bpmn:script>a + b</bpmn:script></bpmn:scriptTask>`))
	if s := node(t, p, "t").Script; s == nil || s.Expression != "${a + b}" || s.ResultVariable != "sum" {
		t.Errorf("camunda script = %+v", s)
	}
	p = mustParse(t, around(`<bpmn:scriptTask id="t" scriptFormat="expr" jetbpm:resultVariable="n"><bpmn:script>len(items)</bpmn:script></bpmn:scriptTask>`))
	if s := node(t, p, "t").Script; s == nil || s.Expression != "len(items)" || s.ResultVariable != "n" {
		t.Errorf("expr script = %+v", s)
	}
	src := around(`<bpmn:scriptTask id="t" scriptFormat="groovy" camunda:resultVariable="sum">
  <bpmn:script>a + b</bpmn:script></bpmn:scriptTask>`)
	e := importError(t, parseErr(t, src))
	if e.ID != "t" || !strings.Contains(e.Msg, `"groovy" needs a JVM script engine: not supported`) || e.Line != lineOf(t, src, "<bpmn:script>") {
		t.Errorf("groovy: %v", e)
	}

	// JavaScript, in each of its names, is a program run with Camunda 7's
	// facade; one that does not compile is refused at its line.
	for _, format := range []string{"javascript", "JavaScript", "js", "ECMAScript"} {
		p = mustParse(t, around(`<bpmn:scriptTask id="t" scriptFormat="`+format+`" camunda:resultVariable="ok"><bpmn:script><![CDATA[
execution.setVariable("total", amount * 2);
total > 100]]></bpmn:script></bpmn:scriptTask>`))
		s := node(t, p, "t").Script
		if s == nil || s.Language != "javascript" || s.ResultVariable != "ok" || !strings.HasPrefix(s.Expression, `execution.setVariable("total"`) || s.Program() == nil {
			t.Errorf("%s script = %+v", format, s)
		}
	}
	// A JavaScript condition on a sequence flow.
	p = mustParse(t, around(`<bpmn:exclusiveGateway id="t"/><bpmn:endEvent id="e2"/>
<bpmn:sequenceFlow id="js" sourceRef="t" targetRef="e2"><bpmn:conditionExpression language="JavaScript">amount &gt; 10</bpmn:conditionExpression></bpmn:sequenceFlow>`))
	if f := p.Flow("js"); f == nil || f.Language != "javascript" || f.Condition != "amount > 10" || f.Program() == nil {
		t.Errorf("javascript condition = %+v", f)
	}
	src = around(`<bpmn:scriptTask id="t" scriptFormat="javascript">
  <bpmn:script>var a = 1;
var b = ;</bpmn:script></bpmn:scriptTask>`)
	if err := parseErr(t, src); !strings.Contains(err.Error(), `element "t" (line 6)`) ||
		!strings.Contains(err.Error(), `script "t" line 2:9: SyntaxError: Unexpected token ;`) {
		t.Errorf("broken javascript: %v", err)
	}
}

func TestTimers(t *testing.T) {
	for _, c := range []struct{ def, typ, want string }{
		{`<bpmn:timeDuration>PT5S</bpmn:timeDuration>`, "duration", "PT5S"},
		{`<bpmn:timeDuration xsi:type="bpmn:tFormalExpression"> =PT5S </bpmn:timeDuration>`, "duration", "PT5S"},
		{`<bpmn:timeDuration>= "PT5S"</bpmn:timeDuration>`, "duration", "PT5S"},
		{`<bpmn:timeDuration>= duration("PT5S")</bpmn:timeDuration>`, "duration", "PT5S"},
		{`<bpmn:timeDate>2030-01-02T03:04:05Z</bpmn:timeDate>`, "date", "2030-01-02T03:04:05Z"},
		{`<bpmn:timeDate>= date and time("2030-01-02T03:04:05Z")</bpmn:timeDate>`, "date", "2030-01-02T03:04:05Z"},
		{`<bpmn:timeCycle>R3/PT10M</bpmn:timeCycle>`, "cycle", "R3/PT10M"},
		{`<bpmn:timeCycle>=cycle(duration("PT1H"))</bpmn:timeCycle>`, "cycle", "R/PT1H"},
	} {
		p := mustParse(t, around(`<bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition>`+c.def+`</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>`))
		n := node(t, p, "t")
		if n.Kind != model.IntermediateCatchEvent || n.Event != model.TimerEvent || n.Timer == nil ||
			string(n.Timer.Type) != c.typ || n.Timer.Value != c.want {
			t.Errorf("%s: node %+v timer %+v", c.def, n, n.Timer)
		}
	}
	// Expressions are kept, to be evaluated when the timer is armed.
	for _, c := range []struct{ def, expr string }{
		{`<bpmn:timeDuration>=reminderDelay</bpmn:timeDuration>`, "=reminderDelay"},
		{`<bpmn:timeDuration>= duration( reminderDelay )</bpmn:timeDuration>`, "=reminderDelay"},
		{`<bpmn:timeDuration>=duration(a) + duration(b)</bpmn:timeDuration>`, "=duration(a) + duration(b)"},
		{`<bpmn:timeDate>=date and time(due)</bpmn:timeDate>`, "=due"},
		{`<bpmn:timeDuration>${waitTime}</bpmn:timeDuration>`, "${waitTime}"},
		{`<bpmn:timeDuration>PT${minutes}M</bpmn:timeDuration>`, "PT${minutes}M"},
	} {
		if expression.IsComposite(c.expr) {
			src, err := expression.TranslateComposite(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			c.expr = src
		}
		src := around(`<bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition>` + c.def + `</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>`)
		if strings.HasPrefix(c.def, "<bpmn:timeDuration>=duration(a)") {
			// FEEL's duration() is not a function jetbpm evaluates.
			if err := parseErr(t, src); !strings.Contains(err.Error(), `element "t"`) || !strings.Contains(err.Error(), `timer duration: expression "=duration(a) + duration(b)": unsupported FEEL function`) {
				t.Errorf("%s: %v", c.def, err)
			}
			continue
		}
		n := node(t, mustParse(t, src), "t")
		if n.Timer == nil || n.Timer.Expr != c.expr || n.Timer.Value != "" {
			t.Errorf("%s: timer %+v, want expression %q", c.def, n.Timer, c.expr)
		}
	}
	for _, c := range []struct{ def, msg string }{
		{`<bpmn:timeCycle>=cycle(every)</bpmn:timeCycle>`, "cycle(...) of an expression is not supported"},
		{`<bpmn:timeDuration>PT${minutes</bpmn:timeDuration>`, `missing closing "}"`},
	} {
		e := importError(t, parseErr(t, around(`<bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition>`+c.def+`</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>`)))
		if e.ID != "t" || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%s: %v, want ...%s", c.def, e, c.msg)
		}
	}
	// A process-level timer start has no variables to evaluate over.
	err := parseErr(t, proc(`<bpmn:startEvent id="t"><bpmn:timerEventDefinition><bpmn:timeCycle>=every</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>
<bpmn:sequenceFlow id="f" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>`))
	if !strings.Contains(err.Error(), "a timer start event's value must be a literal") {
		t.Errorf("timer start from an expression: %v", err)
	}
}

func TestErrorEndEvent(t *testing.T) {
	body := `<bpmn:error id="Err1" name="Payment failed" errorCode="PAYMENT_FAILED" camunda:errorMessage="card declined"/>
<bpmn:process id="p"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:errorEventDefinition errorRef="%s"/></bpmn:endEvent></bpmn:process>`
	p := mustParse(t, doc(strings.Replace(body, "%s", "Err1", 1)))
	if n := node(t, p, "e"); n.Event != model.ErrorEvent || n.ErrorCode != "PAYMENT_FAILED" || n.ErrorMessage != "card declined" {
		t.Errorf("error end = %+v", n)
	}
	p = mustParse(t, doc(strings.Replace(body, ` errorRef="%s"`, "", 1)))
	if n := node(t, p, "e"); n.Event != model.ErrorEvent || n.ErrorCode != "" {
		t.Errorf("error end without errorRef = %+v", n)
	}
	// An errorRef naming no <error> is the code itself, as in Camunda 7.
	p = mustParse(t, doc(strings.Replace(body, "%s", "Nope", 1)))
	if n := node(t, p, "e"); n.ErrorCode != "Nope" || len(p.Warnings) != 1 || p.Warnings[0].Node != "e" || !strings.Contains(p.Warnings[0].Message, `errorRef "Nope" names no <bpmn:error>`) {
		t.Errorf("unknown errorRef: %+v, warnings %v", n, p.Warnings)
	}
	p = mustParse(t, proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:terminateEventDefinition/></bpmn:endEvent>`))
	if n := node(t, p, "e"); n.Event != model.TerminateEvent {
		t.Errorf("terminate end = %+v", n)
	}
}

func TestBoundaryEvents(t *testing.T) {
	p := mustParse(t, doc(`<bpmn:error id="E" errorCode="BOOM"/>
<bpmn:process id="p">
<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<bpmn:task id="t"/><bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>
<bpmn:boundaryEvent id="remind" attachedToRef="t" cancelActivity="false">
  <bpmn:timerEventDefinition><bpmn:timeCycle>R2/PT1H</bpmn:timeCycle></bpmn:timerEventDefinition>
</bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f3" sourceRef="remind" targetRef="e2"/><bpmn:endEvent id="e2"/>
<bpmn:boundaryEvent id="oops" attachedToRef="t"><bpmn:errorEventDefinition errorRef="E"/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f4" sourceRef="oops" targetRef="e3"/><bpmn:endEvent id="e3"/>
</bpmn:process>`))
	if n := node(t, p, "remind"); n.Kind != model.BoundaryEvent || n.AttachedTo != "t" || n.Interrupting || n.Timer == nil || n.Timer.Value != "R2/PT1H" {
		t.Errorf("timer boundary = %+v", n)
	}
	if n := node(t, p, "oops"); !n.Interrupting || n.Event != model.ErrorEvent || n.ErrorCode != "BOOM" {
		t.Errorf("error boundary = %+v", n)
	}
	if len(p.Boundaries("t")) != 2 {
		t.Errorf("boundaries of t = %v", p.Boundaries("t"))
	}
}

func TestNestedSubProcess(t *testing.T) {
	p := mustParse(t, around(`<bpmn:subProcess id="t">
  <bpmn:startEvent id="s1"/><bpmn:sequenceFlow id="g1" sourceRef="s1" targetRef="inner"/>
  <bpmn:subProcess id="inner">
    <bpmn:startEvent id="s2"/><bpmn:sequenceFlow id="h1" sourceRef="s2" targetRef="work"/>
    <bpmn:manualTask id="work"/><bpmn:sequenceFlow id="h2" sourceRef="work" targetRef="e2"/>
    <bpmn:endEvent id="e2"/>
  </bpmn:subProcess>
  <bpmn:sequenceFlow id="g2" sourceRef="inner" targetRef="e1"/><bpmn:endEvent id="e1"/>
</bpmn:subProcess>`))
	for id, scope := range map[string]string{"t": "", "s1": "t", "inner": "t", "e1": "t", "s2": "inner", "work": "inner", "e2": "inner"} {
		if n := node(t, p, id); n.Scope != scope {
			t.Errorf("%s scope = %q, want %q", id, n.Scope, scope)
		}
	}
	if p.StartOf("inner").ID != "s2" || node(t, p, "work").Kind != model.ManualTask {
		t.Errorf("inner start = %v", p.StartOf("inner"))
	}
}

func TestDefaultFlowsAndConditions(t *testing.T) {
	p := mustParse(t, proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t"/>
<bpmn:task id="t" default="tdef"/>
<bpmn:sequenceFlow id="tdef" sourceRef="t" targetRef="gw"/>
<bpmn:sequenceFlow id="tcond" sourceRef="t" targetRef="e"><bpmn:conditionExpression>${skip}</bpmn:conditionExpression></bpmn:sequenceFlow>
<bpmn:exclusiveGateway id="gw" default="low"/>
<bpmn:sequenceFlow id="high" name="big" sourceRef="gw" targetRef="e">
  <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">
     = amount &gt; 1000
  </bpmn:conditionExpression>
</bpmn:sequenceFlow>
<bpmn:sequenceFlow id="low" sourceRef="gw" targetRef="e"/>
<bpmn:endEvent id="e"/>`))
	if node(t, p, "t").Default != "tdef" || node(t, p, "gw").Default != "low" {
		t.Errorf("defaults: t=%q gw=%q", node(t, p, "t").Default, node(t, p, "gw").Default)
	}
	if f := p.Flow("high"); f.Condition != "= amount > 1000" || f.Name != "big" || f.Compiled() == nil {
		t.Errorf("high = %+v", f)
	}
	if p.Flow("tcond").Condition != "${skip}" || p.Flow("low").Condition != "" {
		t.Errorf("conditions: %q %q", p.Flow("tcond").Condition, p.Flow("low").Condition)
	}
}

func TestParallelGatewayAndKinds(t *testing.T) {
	p := mustParse(t, proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>
<bpmn:parallelGateway id="fork"/>
<bpmn:sequenceFlow id="f1" sourceRef="fork" targetRef="a"/><bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="b"/>
<bpmn:task id="a"/><bpmn:manualTask id="b"/>
<bpmn:sequenceFlow id="f3" sourceRef="a" targetRef="join"/><bpmn:sequenceFlow id="f4" sourceRef="b" targetRef="join"/>
<bpmn:parallelGateway id="join"/><bpmn:sequenceFlow id="f5" sourceRef="join" targetRef="e"/><bpmn:endEvent id="e"/>`))
	for id, k := range map[string]model.Kind{"s": model.StartEvent, "fork": model.ParallelGateway, "a": model.Task, "b": model.ManualTask, "join": model.ParallelGateway, "e": model.EndEvent} {
		if node(t, p, id).Kind != k {
			t.Errorf("%s kind = %s, want %s", id, node(t, p, id).Kind, k)
		}
	}
}

func TestInProcessServiceTask(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t" jetbpm:operation="payments.charge" jetbpm:timeout="PT1M30S"/>`))
	if s := node(t, p, "t").Service; s.Operation != "payments.charge" || s.Timeout != 90*time.Second || s.Worker != nil {
		t.Errorf("service = %+v", s)
	}
	for _, attr := range []string{"class", "delegateExpression", "expression"} {
		p := mustParse(t, around(`<bpmn:serviceTask id="t" camunda:`+attr+`="${charger}"/>`))
		n := node(t, p, "t")
		if n.Service.Operation != "${charger}" || n.Extensions["camunda:"+attr] != "${charger}" {
			t.Errorf("%s: node %+v service %+v", attr, n, n.Service)
		}
	}
	for _, c := range []struct{ attrs, want string }{
		{`jetbpm:operation="a" jetbpm:timeout="P1D"`, "hours, minutes and seconds only"},
		{`jetbpm:operation="a" jetbpm:timeout="5s"`, "jetbpm:timeout"},
		{`jetbpm:operation="a" jetbpm:retries="3"`, "unknown attribute jetbpm:retries"},
		{`jetbpm:operation="a" camunda:class="B"`, "several in-process implementations"},
		{`camunda:type="connector"`, `camunda:type="connector" is not supported`},
	} {
		e := importError(t, parseErr(t, around(`<bpmn:serviceTask id="t" `+c.attrs+`/>`)))
		if e.ID != "t" || !strings.Contains(e.Msg, c.want) {
			t.Errorf("%s: %v", c.attrs, e)
		}
	}
	// No implementation at all: the model's validation names the task.
	src := around(`<bpmn:serviceTask id="t"/>`)
	err := parseErr(t, src)
	var me *model.Error
	if !errors.As(err, &me) || me.Element != "t" || me.Line != lineOf(t, src, "<bpmn:serviceTask") || !strings.Contains(me.Msg, "neither") {
		t.Errorf("no implementation: %v", err)
	}
}

func TestMiscRefusals(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{doc(`<bpmn:error id="E" errorCode="=code"/><bpmn:process id="p"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:errorEventDefinition errorRef="E"/></bpmn:endEvent></bpmn:process>`), `<bpmn:endEvent id="e">: bpmn:error: error code "=code" is an expression`},
		{doc(`<bpmn:process id="p" jetbpm:version="2"><bpmn:startEvent id="s"/></bpmn:process>`), `<bpmn:process id="p">: unknown attribute jetbpm:version`},
		{around(`<bpmn:task id="t" jetbpm:operation="x"/>`), `<bpmn:task id="t">: jetbpm:operation applies to service tasks, send tasks and message throw events only`},
		{proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"><bpmn:conditionExpression> </bpmn:conditionExpression></bpmn:sequenceFlow><bpmn:endEvent id="e"/>`), `<bpmn:sequenceFlow id="f">: bpmn:conditionExpression: the condition is empty`},
		{around(`<bpmn:scriptTask id="t" scriptFormat="juel" camunda:resource="deployment://x.juel" camunda:resultVariable="r"/>`), `scripts loaded from a resource (camunda:resource) are supported for JavaScript only`},
		{around(`<bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1S</bpmn:timeDuration><bpmn:timeDate>2030-01-01T00:00:00Z</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>`), "not several"},
		{around(`<bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition/><bpmn:messageEventDefinition/></bpmn:intermediateCatchEvent>`), "several event definitions"},
		{around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="a"><bpmn:extensionElements><zeebe:taskDefinition type="b"/></bpmn:extensionElements></bpmn:serviceTask>`), "both camunda:type=\"external\" and a zeebe:taskDefinition"},
	} {
		err := parseErr(t, c.src)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q in:\n%v", c.want, err)
		}
	}
}

// A JavaScript script task or parameter may load its script from another
// file of the deployment (camunda:resource="deployment://NAME"); one on
// the classpath, or not in the deployment, is refused by name.
func TestScriptResources(t *testing.T) {
	doc := func(res string) string {
		return around(`<bpmn:scriptTask id="t" scriptFormat="javascript" camunda:resource="` + res + `" camunda:resultVariable="r"><bpmn:extensionElements>
  <camunda:inputOutput>
    <camunda:inputParameter name="p"><camunda:script scriptFormat="javascript" resource="` + res + `"/></camunda:inputParameter>
  </camunda:inputOutput></bpmn:extensionElements></bpmn:scriptTask>`)
	}
	res := Resources{"calc.js": []byte("amount * 2\n")}
	ps, err := ParseIn(strings.NewReader(doc("deployment://calc.js")), res)
	if err != nil {
		t.Fatal(err)
	}
	n := node(t, ps[0], "t")
	if s := n.Script; s == nil || s.Language != "javascript" || s.Expression != "amount * 2" || s.Program() == nil {
		t.Errorf("script %+v", s)
	}
	if len(n.Inputs) != 1 || n.Inputs[0].Language != "javascript" || n.Inputs[0].Source != "amount * 2" {
		t.Errorf("inputs %+v", n.Inputs)
	}
	for res, want := range map[string]string{
		"deployment://other.js": `camunda:resource "deployment://other.js": no file "other.js" in this deployment`,
		"org/acme/parse.js":     `camunda:resource "org/acme/parse.js" is on Camunda 7's classpath, which jetbpm does not have: deploy parse.js with the BPMN file`,
	} {
		_, err := ParseIn(strings.NewReader(doc(res)), Resources{"calc.js": []byte("1")})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", res, err, want)
		}
	}
	// Camunda 7's classpath is the deployment: the file of the path, or
	// of the base name.
	for _, res := range []string{"org/acme/calc.js", "classpath://org/acme/calc.js", "calc.js"} {
		ps, err := ParseIn(strings.NewReader(doc(res)), Resources{"calc.js": []byte("amount * 3")})
		if err != nil || node(t, ps[0], "t").Script.Expression != "amount * 3" {
			t.Errorf("%s: %v", res, err)
		}
	}
	if !IsDocument([]byte("\xef\xbb\xbf  <?xml version=\"1.0\"?>")) || IsDocument([]byte("var a = '<x>';")) || IsDocument(nil) {
		t.Error("IsDocument")
	}
}
