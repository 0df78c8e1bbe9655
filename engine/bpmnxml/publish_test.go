package bpmnxml

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// publishOf is n's publish without its compiled expressions.
func publishOf(t *testing.T, n *model.Node) model.Publish {
	t.Helper()
	if n.Publish == nil {
		t.Fatalf("%s does not publish", n.ID)
	}
	p := model.Publish{CorrelationKey: n.Publish.CorrelationKey, TTL: n.Publish.TTL, MessageID: n.Publish.MessageID}
	for _, v := range n.Publish.Variables {
		p.Variables = append(p.Variables, model.Mapping{Target: v.Target, Source: v.Source})
	}
	return p
}

// publishing is a process whose element "t" is throw, with message "m"
// called "order-paid" declared.
func publishing(throw string) string {
	return withMessages(`<bpmn:message id="m" name="order-paid"/>`, around(throw))
}

func TestJetbpmPublish(t *testing.T) {
	const ext = `<bpmn:extensionElements>
  <jetbpm:publish correlationKey="=orderId" timeToLive="PT1H" messageId="=paymentId">
    <jetbpm:variable name="amount" source="=total"/>
    <jetbpm:variable name="currency"/>
  </jetbpm:publish>
</bpmn:extensionElements>`
	want := model.Publish{CorrelationKey: "=orderId", TTL: time.Hour, MessageID: "=paymentId",
		Variables: []model.Mapping{{Target: "amount", Source: "=total"}, {Target: "currency", Source: "currency"}}}
	for _, c := range []struct {
		name, src string
		kind      model.Kind
		ev        model.EventType
	}{
		{"send task", publishing(`<bpmn:sendTask id="t" messageRef="m">` + ext + `</bpmn:sendTask>`), model.SendTask, model.NoneEvent},
		{"throw event", publishing(`<bpmn:intermediateThrowEvent id="t">` + ext + `<bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateThrowEvent>`),
			model.IntermediateThrowEvent, model.MessageEvent},
		{"end event", withMessages(`<bpmn:message id="m" name="order-paid"/>`, proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/>
<bpmn:endEvent id="t">`+ext+`<bpmn:messageEventDefinition messageRef="m"/></bpmn:endEvent>`)), model.EndEvent, model.MessageEvent},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := node(t, mustParse(t, c.src), "t")
			wantNode(t, n, c.kind, c.ev, model.Message{Name: "order-paid"})
			if n.Service != nil {
				t.Errorf("a publish runs no job: %+v", n.Service)
			}
			if got := publishOf(t, n); !reflect.DeepEqual(got, want) {
				t.Errorf("publish\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// Every attribute is optional; expressions are in any dialect.
func TestJetbpmPublishForms(t *testing.T) {
	for _, c := range []struct {
		attrs, vars string
		want        model.Publish
	}{
		{``, ``, model.Publish{}},
		{`correlationKey="${order.id}" timeToLive="PT0S"`, `<jetbpm:variable name="x" source="${a + 1}"/>`,
			model.Publish{CorrelationKey: "${order.id}", Variables: []model.Mapping{{Target: "x", Source: "${a + 1}"}}}},
		{`correlationKey=" 'o-' + id " timeToLive="PT1M30S" messageId="id"`, ``,
			model.Publish{CorrelationKey: "'o-' + id", TTL: 90 * time.Second, MessageID: "id"}},
	} {
		n := node(t, mustParse(t, publishing(`<bpmn:sendTask id="t" messageRef="m"><bpmn:extensionElements>
  <jetbpm:publish `+c.attrs+`>`+c.vars+`</jetbpm:publish></bpmn:extensionElements></bpmn:sendTask>`)), "t")
		if got := publishOf(t, n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.attrs, c.vars, got, c.want)
		}
	}
}

// The imported publish is what model.WithPublish builds.
func TestJetbpmPublishMatchesBuilder(t *testing.T) {
	p := mustParse(t, publishing(`<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements>
  <jetbpm:publish correlationKey="=orderId" timeToLive="PT10M"><jetbpm:variable name="amount" source="=total"/></jetbpm:publish>
</bpmn:extensionElements><bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateThrowEvent>`))
	b, err := model.NewBuilder("p").StartEvent("s").
		MessageThrowEvent("t", "order-paid", model.WithPublish(model.Publish{CorrelationKey: "=orderId", TTL: 10 * time.Minute,
			Variables: []model.Mapping{{Target: "amount", Source: "=total"}}})).
		EndEvent("e").Sequence("s", "t", "e").Build()
	if err != nil {
		t.Fatal(err)
	}
	got, want := node(t, p, "t"), b.Node("t")
	if got.Kind != want.Kind || got.Event != want.Event || messageOf(t, got) != messageOf(t, want) ||
		!reflect.DeepEqual(publishOf(t, got), publishOf(t, want)) {
		t.Errorf("imported %+v %+v\nbuilt %+v %+v", got, got.Publish, want, want.Publish)
	}
}

func TestJetbpmPublishRefusals(t *testing.T) {
	send := func(ext string) string {
		return publishing(`<bpmn:sendTask id="t" messageRef="m"><bpmn:extensionElements>
  ` + ext + `</bpmn:extensionElements></bpmn:sendTask>`)
	}
	cases := []struct {
		name, src string
		marker    string // the error's line is this text's line
		msg       string
	}{
		{"unknown attribute", send(`<jetbpm:publish key="=a"/>`), "<jetbpm:publish",
			"jetbpm:publish: unknown attribute key (jetbpm:publish takes attributes correlationKey, timeToLive, messageId)"},
		{"empty key", send(`<jetbpm:publish correlationKey=" "/>`), "<jetbpm:publish", "jetbpm:publish: correlationKey is empty"},
		{"bad key", send(`<jetbpm:publish correlationKey="=a +"/>`), "<jetbpm:publish", `correlationKey="=a +": expression`},
		{"empty id", send(`<jetbpm:publish messageId=""/>`), "<jetbpm:publish", "messageId is empty"},
		{"bad id", send(`<jetbpm:publish messageId="${a b}"/>`), "<jetbpm:publish", `messageId="${a b}": expression`},
		{"ttl syntax", send(`<jetbpm:publish timeToLive="1h"/>`), "<jetbpm:publish", `timeToLive="1h": duration "1h" is not ISO-8601`},
		{"ttl negative", send(`<jetbpm:publish timeToLive="-PT1S"/>`), "<jetbpm:publish", `timeToLive="-PT1S": duration "-PT1S" is not ISO-8601`},
		{"ttl days", send(`<jetbpm:publish timeToLive="P1D"/>`), "<jetbpm:publish", `timeToLive="P1D": use hours, minutes and seconds only`},
		{"unknown child", send(`<jetbpm:publish>
  <jetbpm:output path="a" variable="b"/></jetbpm:publish>`), "<jetbpm:output", "jetbpm:output: not supported inside jetbpm:publish (only jetbpm:variable)"},
		{"variable name", send(`<jetbpm:publish>
  <jetbpm:variable name="order id"/></jetbpm:publish>`), "<jetbpm:variable", `name="order id" is not a variable name`},
		{"variable without name", send(`<jetbpm:publish>
  <jetbpm:variable source="=a"/></jetbpm:publish>`), "<jetbpm:variable", `name="" is not a variable name`},
		{"variable twice", send(`<jetbpm:publish><jetbpm:variable name="a"/>
  <jetbpm:variable name="a" source="=b"/></jetbpm:publish>`), `source="=b"`, `variable "a" is published twice`},
		{"variable empty source", send(`<jetbpm:publish>
  <jetbpm:variable name="a" source=""/></jetbpm:publish>`), "<jetbpm:variable", `variable "a": source is empty`},
		{"variable bad source", send(`<jetbpm:publish>
  <jetbpm:variable name="a" source="=b +"/></jetbpm:publish>`), "<jetbpm:variable", `variable "a": source="=b +": expression`},
		{"variable attribute", send(`<jetbpm:publish>
  <jetbpm:variable name="a" target="b"/></jetbpm:publish>`), "<jetbpm:variable", "unknown attribute target (jetbpm:variable takes attributes name, source)"},
		{"variable child", send(`<jetbpm:publish><jetbpm:variable name="a">
  <jetbpm:x/></jetbpm:variable></jetbpm:publish>`), "<jetbpm:x", "jetbpm:x: not supported inside jetbpm:variable"},
		{"twice", send(`<jetbpm:publish/>
  <jetbpm:publish correlationKey="=b"/>`), `correlationKey="=b"`, "jetbpm:publish: appears twice in the sendTask"},
		{"and a job", send(`<zeebe:taskDefinition type="mail"/>
  <jetbpm:publish/>`), "<jetbpm:publish", "the sendTask also runs a job (worker topic mail); a message throw either runs a job or publishes its message, choose one"},
		{"and an operation", publishing(`<bpmn:sendTask id="t" messageRef="m" camunda:class="a.B"><bpmn:extensionElements>
  <jetbpm:publish/></bpmn:extensionElements></bpmn:sendTask>`), "<jetbpm:publish", "also runs a job (in-process operation a.B)"},
		{"job options", send(`<jetbpm:publish/>
  <jetbpm:retryPolicy kind="none"/>`), "<jetbpm:retryPolicy", "job options apply to external jobs only; this sendTask runs no job"},
		{"without messageRef", around(`<bpmn:sendTask id="t"><bpmn:extensionElements>
  <jetbpm:publish/></bpmn:extensionElements></bpmn:sendTask>`), "<jetbpm:publish", "publishes the element's message, and it names none: add messageRef"},
		{"on a service task", zeebeTask(`<jetbpm:publish/>`), "<jetbpm:publish",
			"jetbpm:publish: applies to send tasks and message throw events (intermediate throw and end events with a messageEventDefinition) only"},
		{"on a none throw", around(`<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements>
  <jetbpm:publish/></bpmn:extensionElements></bpmn:intermediateThrowEvent>`), "<jetbpm:publish", "applies to send tasks and message throw events"},
		{"on a catch", withMessages(zeebeMessage("m", "go", "=k"), around(`<bpmn:receiveTask id="t" messageRef="m"><bpmn:extensionElements>
  <jetbpm:publish/></bpmn:extensionElements></bpmn:receiveTask>`)), "<jetbpm:publish", "applies to send tasks and message throw events"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := parseErr(t, c.src)
			e := importError(t, err)
			line := lineOf(t, c.src, c.marker)
			tag := tagOf(c.src)
			if e.Element != tag || e.ID != "t" || e.Line != line || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %v\nwant <%s id=\"t\"> at line %d: ...%s", e, tag, line, c.msg)
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
				t.Errorf("%d problems, want 1:\n%v", n, err)
			}
		})
	}
}

// A publish whose messageRef is wrong is refused once, for the messageRef.
func TestJetbpmPublishUnknownMessage(t *testing.T) {
	src := publishing(`<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements><jetbpm:publish/></bpmn:extensionElements>
  <bpmn:messageEventDefinition messageRef="nope"/></bpmn:intermediateThrowEvent>`)
	err := parseErr(t, src)
	e := importError(t, err)
	if e.Line != lineOf(t, src, `messageRef="nope"`) || !strings.Contains(e.Msg, `messageRef "nope" names no <bpmn:message>`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v", err)
	}
}

// jetbpm:publish elsewhere than on a flow node.
func TestJetbpmPublishElsewhere(t *testing.T) {
	src := doc(`<bpmn:process id="p"><bpmn:extensionElements>
  <jetbpm:publish/></bpmn:extensionElements><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/><bpmn:endEvent id="e"/></bpmn:process>`)
	if err := parseErr(t, src); !strings.Contains(err.Error(), `line 4: <bpmn:process id="p">: jetbpm:publish: not supported on a process; it publishes the message of a message throw`) {
		t.Errorf("got %v", err)
	}
}

// tagOf is the tag of element "t" in src.
func tagOf(src string) string {
	i := strings.Index(src, ` id="t"`)
	return src[strings.LastIndex(src[:i], "<")+1 : i]
}
