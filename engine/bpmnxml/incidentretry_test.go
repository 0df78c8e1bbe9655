package bpmnxml

import (
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// withExt is the element <kind id="t" attrs> with extension elements ext
// followed by body.
func withExt(kind, attrs, ext, body string) string {
	return around(`<bpmn:` + kind + ` id="t" ` + attrs + `><bpmn:extensionElements>
` + ext + `
</bpmn:extensionElements>` + body + `</bpmn:` + kind + `>`)
}

// subProcessBody is the contents of a sub-process that runs through.
const subProcessBody = `<bpmn:startEvent id="in"/><bpmn:sequenceFlow id="g" sourceRef="in" targetRef="out"/><bpmn:endEvent id="out"/>`

// jetbpm:incidentRetry sets the incident retry policy of any activity, in
// the syntax of jetbpm:retryPolicy.
func TestJetbpmIncidentRetry(t *testing.T) {
	const fixed = `<jetbpm:incidentRetry kind="fixed" maxAttempts="2" delay="PT0.1S"/>`
	want := jobs.FixedDelaySpec(2, 100*time.Millisecond)
	cases := []struct {
		name, src string
		want      jobs.RetrySpec
	}{
		// Each kind of activity.
		{"in-process service task", withExt("serviceTask", `jetbpm:operation="charge"`, fixed, ""), want},
		{"camunda:class service task", withExt("serviceTask", `camunda:class="a.B"`, fixed, ""), want},
		{"camunda external task", withExt("serviceTask", `camunda:type="external" camunda:topic="pay"`, fixed, ""), want},
		{"jetbpm worker task", withExt("serviceTask", ``, `<jetbpm:worker topic="pay"/>`+fixed, ""), want},
		{"script task", withExt("scriptTask", `scriptFormat="expr" jetbpm:resultVariable="r"`, fixed, `<bpmn:script>1 + 1</bpmn:script>`), want},
		{"zeebe script task", withExt("scriptTask", ``, `<zeebe:script expression="=1 + 1" resultVariable="r"/>`+fixed, ""), want},
		{"task", withExt("task", ``, fixed, ""), want},
		{"manual task", withExt("manualTask", ``, fixed, ""), want},
		{"sub-process", withExt("subProcess", ``, fixed, subProcessBody), want},
		{"call activity", withExt("callActivity", `calledElement="child"`, fixed, ""), want},
		{"multi-instance activity", withExt("serviceTask", `jetbpm:operation="charge"`, fixed,
			`<bpmn:multiInstanceLoopCharacteristics camunda:collection="items" camunda:elementVariable="item"/>`), want},

		// Each form.
		{"none", zeebeTask(`<jetbpm:incidentRetry kind="none"/>`), jobs.NoRetrySpec()},
		{"none once", zeebeTask(`<jetbpm:incidentRetry kind="none" maxAttempts="1"/>`), jobs.NoRetrySpec()},
		{"fixed default attempts", zeebeTask(`<jetbpm:incidentRetry kind="fixed" delay="PT1M30S"/>`), jobs.FixedDelaySpec(3, 90*time.Second)},
		{"fixed zero delay", zeebeTask(`<jetbpm:incidentRetry kind="fixed" maxAttempts="5" delay="PT0S"/>`), jobs.FixedDelaySpec(5, 0)},
		{"exponential defaults, no jitter", zeebeTask(`<jetbpm:incidentRetry kind="exponential"/>`),
			jobs.ExponentialSpec(3, 500*time.Millisecond, 30*time.Second, 0)},
		{"exponential", zeebeTask(`<jetbpm:incidentRetry kind="exponential" maxAttempts=" 4 " base="PT1S" cap="PT1H"/>`),
			jobs.ExponentialSpec(4, time.Second, time.Hour, 0)},
		{"exponential cap only", zeebeTask(`<jetbpm:incidentRetry kind="exponential" cap="PT2M"/>`),
			jobs.ExponentialSpec(3, 500*time.Millisecond, 2*time.Minute, 0)},
		{"other attributes and namespaces ignored", zeebeTask(`<jetbpm:incidentRetry xmlns:x="urn:x" x:note="n" kind="fixed" delay="PT1S"/>`),
			jobs.FixedDelaySpec(3, time.Second)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := node(t, mustParse(t, c.src), "t")
			if n.IncidentRetry == nil || *n.IncidentRetry != c.want {
				t.Fatalf("incident retry %+v, want %+v", n.IncidentRetry, c.want)
			}
		})
	}
}

// zeebe:taskDefinition retries and jetbpm:retryPolicy configure a job's
// retries within one run of the task; they neither set nor contradict the
// incident retry policy's maxAttempts, nor does it change them.
func TestJetbpmIncidentRetryIndependentOfJobRetries(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <jetbpm:incidentRetry kind="fixed" delay="PT1M"/>
  <zeebe:taskDefinition type="pay" retries="5"/>
</bpmn:extensionElements></bpmn:serviceTask>`))
	n := node(t, p, "t")
	if got, want := n.IncidentRetry, jobs.FixedDelaySpec(3, time.Minute); got == nil || *got != want {
		t.Fatalf("incident retry %+v, want %+v: zeebe retries must not set its maxAttempts", got, want)
	}
	if w := n.Service.Worker; w.Retries != 5 || w.Overrides().Retry.MaxAttempts != 5 {
		t.Fatalf("worker %+v: want the job's 5 attempts", w)
	}

	p = mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="pay" retries="3"/>
  <jetbpm:retryPolicy kind="fixed" delay="PT1S"/>
  <jetbpm:incidentRetry kind="exponential" maxAttempts="7" cap="PT10M"/>
</bpmn:extensionElements></bpmn:serviceTask>`))
	n = node(t, p, "t")
	if got, want := n.IncidentRetry, jobs.ExponentialSpec(7, 500*time.Millisecond, 10*time.Minute, 0); got == nil || *got != want {
		t.Fatalf("incident retry %+v, want %+v", got, want)
	}
	if got, want := n.Service.Worker.Options.Retry, jobs.FixedDelaySpec(3, time.Second); got == nil || *got != want {
		t.Fatalf("job retry %+v, want %+v", got, want)
	}

	// Without the element the activity has no policy of its own: the
	// engine-wide one applies.
	p = mustParse(t, zeebeTask(`<jetbpm:retryPolicy kind="fixed" delay="PT1S"/>`))
	if n := node(t, p, "t"); n.IncidentRetry != nil {
		t.Fatalf("incident retry %+v, want none", n.IncidentRetry)
	}
}

// Every jetbpm:incidentRetry problem names the element that holds it, its
// id, and the line of the jetbpm:incidentRetry.
func TestJetbpmIncidentRetryRefusals(t *testing.T) {
	cases := []struct {
		name, src string
		element   string // the element named: bpmn:<element> id="t"
		marker    string // the error's line is this text's line
		msg       string
	}{
		{"no kind", zeebeTask(`<jetbpm:incidentRetry maxAttempts="3"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`jetbpm:incidentRetry: kind="" is not one of none, fixed, exponential`},
		{"unknown kind", zeebeTask(`<jetbpm:incidentRetry kind="linear"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`kind="linear" is not one of none, fixed, exponential`},
		{"custom kind", zeebeTask(`<jetbpm:incidentRetry kind="custom"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`kind="custom" is not one of none, fixed, exponential (incident retries take no custom policy`},
		{"unknown attribute", zeebeTask(`<jetbpm:incidentRetry kind="fixed" delay="PT1S" backoff="2"/>`), "serviceTask", "<jetbpm:incidentRetry",
			"unknown attribute backoff (jetbpm:incidentRetry takes attributes kind, maxAttempts, delay, base, cap)"},
		{"jitter", zeebeTask(`<jetbpm:incidentRetry kind="exponential" jitter="0.2"/>`), "serviceTask", "<jetbpm:incidentRetry",
			"unknown attribute jitter (jetbpm:incidentRetry takes attributes kind, maxAttempts, delay, base, cap)"},
		{"name", zeebeTask(`<jetbpm:incidentRetry kind="custom" name="p"/>`), "serviceTask", "<jetbpm:incidentRetry",
			"unknown attribute name (jetbpm:incidentRetry takes attributes kind, maxAttempts, delay, base, cap)"},
		{"qualified attribute", zeebeTask(`<jetbpm:incidentRetry jetbpm:kind="none"/>`), "serviceTask", "<jetbpm:incidentRetry",
			"unknown attribute jetbpm:kind"},
		{"delay on exponential", zeebeTask(`<jetbpm:incidentRetry kind="exponential" delay="PT1S"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`delay does not apply to kind="exponential"`},
		{"base on fixed", zeebeTask(`<jetbpm:incidentRetry kind="fixed" delay="PT1S" base="PT1S"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`base does not apply to kind="fixed"`},
		{"cap on none", zeebeTask(`<jetbpm:incidentRetry kind="none" cap="PT1S"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`cap does not apply to kind="none"`},
		{"attempts zero", zeebeTask(`<jetbpm:incidentRetry kind="fixed" maxAttempts="0" delay="PT1S"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`maxAttempts="0" is not a positive integer`},
		{"attempts text", zeebeTask(`<jetbpm:incidentRetry kind="exponential" maxAttempts="many"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`maxAttempts="many" is not a positive integer`},
		{"none attempts", zeebeTask(`<jetbpm:incidentRetry kind="none" maxAttempts="2"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`maxAttempts="2": kind="none" runs once`},
		{"fixed no delay", zeebeTask(`<jetbpm:incidentRetry kind="fixed" maxAttempts="2"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`kind="fixed" needs delay`},
		{"fixed bad delay", zeebeTask(`<jetbpm:incidentRetry kind="fixed" delay="-PT1S"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`delay="-PT1S": duration`},
		{"fixed delay in days", zeebeTask(`<jetbpm:incidentRetry kind="fixed" delay="P1D"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`delay="P1D": use hours, minutes and seconds only`},
		{"cap syntax", zeebeTask(`<jetbpm:incidentRetry kind="exponential" cap="30"/>`), "serviceTask", "<jetbpm:incidentRetry",
			`cap="30": duration "30" is not ISO-8601`},
		{"base over cap", zeebeTask(`<jetbpm:incidentRetry kind="exponential" base="PT1M" cap="PT1S"/>`), "serviceTask", "<jetbpm:incidentRetry",
			"base 1m0s exceeds cap 1s"},
		{"child", zeebeTask(`<jetbpm:incidentRetry kind="none">
  <jetbpm:rule technical="true"/></jetbpm:incidentRetry>`), "serviceTask", "<jetbpm:rule",
			"jetbpm:rule: not supported inside jetbpm:incidentRetry"},
		{"twice", withExt("subProcess", ``, `<jetbpm:incidentRetry kind="none"/>
  <jetbpm:incidentRetry kind="fixed" delay="PT1S"/>`, subProcessBody), "subProcess", `<jetbpm:incidentRetry kind="fixed"`,
			"jetbpm:incidentRetry: appears twice in the subProcess; keep one"},
		{"twice on a script task", withExt("scriptTask", `scriptFormat="expr" jetbpm:resultVariable="r"`, `<jetbpm:incidentRetry kind="none"/>
  <jetbpm:incidentRetry kind="none" maxAttempts="1"/>`, `<bpmn:script>1</bpmn:script>`), "scriptTask", `maxAttempts="1"`,
			"appears twice in the scriptTask"},
		{"on a call activity, bad value", withExt("callActivity", `calledElement="child"`, `<jetbpm:incidentRetry kind="fixed"/>`, ""),
			"callActivity", "<jetbpm:incidentRetry", `kind="fixed" needs delay`},

		// Not an activity: events and gateways have no incident retry policy.
		{"on a gateway", withExt("exclusiveGateway", ``, `<jetbpm:incidentRetry kind="none"/>`, ""), "exclusiveGateway", "<jetbpm:incidentRetry",
			"jetbpm:incidentRetry: applies to activities only (tasks, sub-processes, call activities)"},
		{"on a catch event", withExt("intermediateCatchEvent", ``, `<jetbpm:incidentRetry kind="none"/>`,
			`<bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>`),
			"intermediateCatchEvent", "<jetbpm:incidentRetry", "applies to activities only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := importError(t, parseErr(t, c.src))
			line := lineOf(t, c.src, c.marker)
			if e.Element != "bpmn:"+c.element || e.ID != "t" || e.Line != line || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %v\nwant <bpmn:%s id=\"t\"> at line %d: ...%s", e, c.element, line, c.msg)
			}
		})
	}
}

// jetbpm:incidentRetry on a start, end or boundary event, a process or a
// sequence flow is refused with the line of the element.
func TestJetbpmIncidentRetryElsewhere(t *testing.T) {
	src := doc(`<bpmn:process id="p"><bpmn:extensionElements>
  <jetbpm:incidentRetry kind="none"/></bpmn:extensionElements>
<bpmn:startEvent id="s"><bpmn:extensionElements>
  <jetbpm:incidentRetry kind="none"/></bpmn:extensionElements></bpmn:startEvent>
<bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"><bpmn:extensionElements>
  <jetbpm:incidentRetry kind="none"/></bpmn:extensionElements></bpmn:sequenceFlow>
<bpmn:serviceTask id="t" jetbpm:operation="op"/>
<bpmn:boundaryEvent id="b" attachedToRef="t"><bpmn:extensionElements>
  <jetbpm:incidentRetry kind="none"/></bpmn:extensionElements><bpmn:errorEventDefinition/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:extensionElements>
  <jetbpm:incidentRetry kind="none"/></bpmn:extensionElements></bpmn:endEvent></bpmn:process>`)
	err := parseErr(t, src)
	for _, want := range []string{
		`line 4: <bpmn:process id="p">: jetbpm:incidentRetry: not supported on a process; it configures an activity`,
		`line 6: <bpmn:startEvent id="s">: jetbpm:incidentRetry: applies to activities only (tasks, sub-processes, call activities)`,
		`line 8: <bpmn:sequenceFlow id="f">: jetbpm:incidentRetry: not supported on a sequenceFlow; it configures an activity`,
		`line 11: <bpmn:boundaryEvent id="b">: jetbpm:incidentRetry: applies to activities only`,
		`line 14: <bpmn:endEvent id="e">: jetbpm:incidentRetry: applies to activities only`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "jetbpm:incidentRetry"); n != 5 {
		t.Errorf("%d problems with jetbpm:incidentRetry, want 5:\n%v", n, err)
	}
}

// The policy an imported activity carries passes model validation, as the
// builder's model.WithIncidentRetry does.
func TestJetbpmIncidentRetryMatchesBuilder(t *testing.T) {
	p := mustParse(t, withExt("serviceTask", `jetbpm:operation="charge"`,
		`<jetbpm:incidentRetry kind="exponential" maxAttempts="4" base="PT2S" cap="PT1M"/>`, ""))
	b, err := model.NewBuilder("p").StartEvent("s").
		ServiceTask("t", "charge", model.WithIncidentRetry(jobs.ExponentialSpec(4, 2*time.Second, time.Minute, 0))).
		EndEvent("e").Sequence("s", "t", "e").Build()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *node(t, p, "t").IncidentRetry, *b.Node("t").IncidentRetry; got != want {
		t.Fatalf("imported %+v, built %+v", got, want)
	}
}
