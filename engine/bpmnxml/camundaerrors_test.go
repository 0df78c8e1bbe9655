package bpmnxml

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/jobs"
)

const c7Errors = `<bpmn:error id="nf" name="Not found" errorCode="NOT_FOUND"/>
<bpmn:error id="late" errorCode="TOO_LATE"/>
<bpmn:error id="nocode" name="No code"/>`

// c7Task is an external task with extension elements ext.
func c7Task(attrs, ext string) string {
	return withMessages(c7Errors, around(`<bpmn:serviceTask id="t" `+attrs+`><bpmn:extensionElements>`+ext+`</bpmn:extensionElements></bpmn:serviceTask>`))
}

const external = `camunda:type="external" camunda:topic="lookup"`

func TestCamundaErrorEventDefinitions(t *testing.T) {
	rule := func(code string) jobs.Rule { return jobs.Rule{Outcome: jobs.BusinessError, ErrorCode: code} }
	for _, tt := range []struct {
		name     string
		attrs    string
		ext      string
		rules    []jobs.Rule
		complete string
	}{
		{"always", external, `<camunda:errorEventDefinition id="d" errorRef="nf" expression="${true}"/>`,
			[]jobs.Rule{rule("NOT_FOUND")}, "NOT_FOUND"},
		{"never, then always: the first that holds wins", external, `
<camunda:errorEventDefinition id="d1" errorRef="late" expression="${false}"/>
<camunda:errorEventDefinition id="d2" errorRef="late"/>
<camunda:errorEventDefinition id="d3" errorRef="nf" expression="#{true}"/>
<camunda:errorEventDefinition id="d4" errorRef="late" expression="true"/>`,
			[]jobs.Rule{rule("NOT_FOUND"), rule("TOO_LATE")}, "NOT_FOUND"},
		{"never", external, `<camunda:errorEventDefinition id="d" errorRef="nf" expression="${false}"/>`, nil, ""},
		{"after the task's jetbpm rules", external, `<jetbpm:errorMapper><jetbpm:rule code="409" bpmnError="CONFLICT"/></jetbpm:errorMapper>
<camunda:errorEventDefinition id="d" errorRef="nf" expression="${true}"/>`,
			[]jobs.Rule{{Code: "409", Outcome: jobs.BusinessError, ErrorCode: "CONFLICT"}, rule("NOT_FOUND")}, "NOT_FOUND"},
		{"zeebe task definition", "", `<zeebe:taskDefinition type="lookup"/><camunda:errorEventDefinition id="d" errorRef="nf" expression="${true}"/>`,
			[]jobs.Rule{rule("NOT_FOUND")}, "NOT_FOUND"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, c7Task(tt.attrs, tt.ext))
			w := node(t, p, "t").Service.Worker
			if !slices.Equal(w.Options.Rules, tt.rules) || w.CompleteError != tt.complete {
				t.Errorf("rules %+v, complete error %q; want %+v, %q", w.Options.Rules, w.CompleteError, tt.rules, tt.complete)
			}
			if err := jobs.ValidateRules(w.Options.Rules); err != nil {
				t.Error(err)
			}
		})
	}
}

// A throw event's job takes them on its messageEventDefinition, where
// Camunda 7 puts the job's configuration.
func TestCamundaErrorEventDefinitionOnThrow(t *testing.T) {
	p := mustParse(t, withMessages(c7Errors, around(`<bpmn:intermediateThrowEvent id="t">
  <bpmn:messageEventDefinition camunda:type="external" camunda:topic="mail"><bpmn:extensionElements>
    <camunda:errorEventDefinition id="d" errorRef="late" expression="${true}"/>
  </bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateThrowEvent>`)))
	if w := node(t, p, "t").Service.Worker; w.CompleteError != "TOO_LATE" || len(w.Options.Rules) != 1 {
		t.Errorf("worker %+v", w)
	}
}

func TestCamundaErrorEventDefinitionRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, attrs, ext, marker, msg string
	}{
		{"reads a variable", external, `<camunda:errorEventDefinition id="d" errorRef="nf" expression="${status == 404}"/>`,
			"<camunda:errorEventDefinition", `expression="${status == 404}": only a constant (${true} or ${false}) can be mapped`},
		{"reads the external task", external, `<camunda:errorEventDefinition id="d" errorRef="nf" expression="${externalTask.getErrorDetails().contains('x')}"/>`,
			"<camunda:errorEventDefinition", "cannot read variables or Camunda 7's externalTask: write a jetbpm:rule instead"},
		{"no errorRef", external, `<camunda:errorEventDefinition id="d" expression="${true}"/>`,
			"<camunda:errorEventDefinition", "names no error: add errorRef"},
		{"unknown errorRef", external, `<camunda:errorEventDefinition id="d" errorRef="nope" expression="${true}"/>`,
			"<camunda:errorEventDefinition", `errorRef "nope" names no <error>`},
		{"error without code", external, `<camunda:errorEventDefinition id="d" errorRef="nocode" expression="${true}"/>`,
			"<camunda:errorEventDefinition", `error "nocode" has no errorCode`},
		{"in-process task", `camunda:class="a.B"`, `<camunda:errorEventDefinition id="d" errorRef="nf" expression="${true}"/>`,
			"<camunda:errorEventDefinition", "applies to external tasks only"},
		{"custom error mapper", external, `<jetbpm:errorMapper custom="http"/><camunda:errorEventDefinition id="d" errorRef="nf" expression="${true}"/>`,
			"<camunda:errorEventDefinition", `classified by the custom error mapper "http"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := c7Task(tt.attrs, tt.ext)
			err := parseErr(t, src)
			if !hasProblem(err, lineOf(t, src, tt.marker), tt.msg) {
				t.Errorf("got %v\nwant line %d: ...%s", err, lineOf(t, src, tt.marker), tt.msg)
			}
		})
	}

	// Outside a task's extension elements it has nothing to map.
	src := withMessages(c7Errors, proc(`<bpmn:extensionElements><camunda:errorEventDefinition id="d" errorRef="nf" expression="${true}"/></bpmn:extensionElements>
<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/><bpmn:endEvent id="e"/>`))
	if err := parseErr(t, src); !hasProblem(err, lineOf(t, src, "<camunda:errorEventDefinition"), "not supported on a process") {
		t.Errorf("got %v", err)
	}
}
