package bpmnxml

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// humanOf is n's Human without its compiled expressions.
func humanOf(t *testing.T, n *model.Node) model.Human {
	t.Helper()
	if n.Kind != model.UserTask {
		t.Fatalf("%s is a %s, want a user task", n.ID, n.Kind)
	}
	if n.Human == nil {
		t.Fatalf("%s has no Human", n.ID)
	}
	h := n.Human
	return model.Human{Assignee: h.Assignee, CandidateUsers: h.CandidateUsers, CandidateGroups: h.CandidateGroups,
		DueDate: h.DueDate, FollowUpDate: h.FollowUpDate, Priority: h.Priority,
		FormKey: h.FormKey, FormID: h.FormID, ExternalReference: h.ExternalReference, Form: h.Form}
}

// evals checks what each of n's compiled fields evaluates to over vars;
// a field missing from want must not be set.
func evals(t *testing.T, n *model.Node, vars map[string]any, want map[model.HumanField]any) {
	t.Helper()
	for f := model.AssigneeField; f <= model.PriorityField; f++ {
		e := n.Human.Compiled(f)
		w, set := want[f]
		if !set {
			if e != nil {
				t.Errorf("%s: %s is set to %s", n.ID, f, e.Source())
			}
			continue
		}
		if e == nil {
			t.Errorf("%s: %s is not compiled", n.ID, f)
			continue
		}
		got, err := e.Eval(vars)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %s = %#v, %v; want %#v", n.ID, f, got, err, w)
		}
	}
}

func TestCamunda7UserTaskStatic(t *testing.T) {
	p := mustParse(t, around(`<bpmn:userTask id="t" name="Review" camunda:assignee="alice" camunda:candidateUsers="bob, carol"
  camunda:candidateGroups="sales, ops" camunda:dueDate="2025-06-30T17:00:00Z" camunda:followUpDate="2025-06-29T09:00:00+02:00"
  camunda:priority="70" camunda:formKey="embedded:app:forms/review.html"/>`))
	n := node(t, p, "t")
	want := model.Human{Assignee: `"alice"`, CandidateUsers: `"bob, carol"`, CandidateGroups: `"sales, ops"`,
		DueDate: `"2025-06-30T17:00:00Z"`, FollowUpDate: `"2025-06-29T09:00:00+02:00"`, Priority: `70`,
		FormKey: "embedded:app:forms/review.html"}
	if got := humanOf(t, n); got != want {
		t.Errorf("human\n got %+v\nwant %+v", got, want)
	}
	evals(t, n, nil, map[model.HumanField]any{model.AssigneeField: "alice", model.CandidateUsersField: "bob, carol",
		model.CandidateGroupsField: "sales, ops", model.DueDateField: "2025-06-30T17:00:00Z",
		model.FollowUpDateField: "2025-06-29T09:00:00+02:00", model.PriorityField: 70})
	if n.Name != "Review" || n.Extensions["camunda:assignee"] != "alice" {
		t.Errorf("node %+v", n)
	}
}

func TestCamunda7UserTaskExpressions(t *testing.T) {
	p := mustParse(t, around(`<bpmn:userTask id="t" camunda:assignee="${requester}" camunda:candidateUsers="#{reviewers}"
  camunda:candidateGroups="${dept}" camunda:dueDate="${due}" camunda:followUpDate="${followUp}"
  camunda:priority="${urgent ? 90 : 40}" camunda:formRef="review-form" camunda:formRefBinding="latest"/>`))
	n := node(t, p, "t")
	want := model.Human{Assignee: "${requester}", CandidateUsers: "#{reviewers}", CandidateGroups: "${dept}",
		DueDate: "${due}", FollowUpDate: "${followUp}", Priority: "${urgent ? 90 : 40}", FormID: "review-form"}
	if got := humanOf(t, n); got != want {
		t.Errorf("human\n got %+v\nwant %+v", got, want)
	}
	vars := map[string]any{"requester": "dave", "reviewers": []any{"erin", "frank"}, "dept": "legal",
		"due": "2025-07-01T12:00:00Z", "followUp": "2025-06-30T12:00:00Z", "urgent": true}
	evals(t, n, vars, map[model.HumanField]any{model.AssigneeField: "dave", model.CandidateUsersField: []any{"erin", "frank"},
		model.CandidateGroupsField: "legal", model.DueDateField: "2025-07-01T12:00:00Z",
		model.FollowUpDateField: "2025-06-30T12:00:00Z", model.PriorityField: 90})
	if n.Extensions["camunda:formRefBinding"] != "latest" {
		t.Errorf("extensions %v", n.Extensions)
	}
}

// Camunda 7 reads the BPMN-standard humanPerformer and potentialOwner too.
func TestCamunda7Performers(t *testing.T) {
	p := mustParse(t, around(`<bpmn:userTask id="t">
  <bpmn:humanPerformer><bpmn:resourceAssignmentExpression><bpmn:formalExpression>${owner}</bpmn:formalExpression></bpmn:resourceAssignmentExpression></bpmn:humanPerformer>
  <bpmn:potentialOwner><bpmn:resourceAssignmentExpression><bpmn:formalExpression>user(kermit), group(management), sales</bpmn:formalExpression></bpmn:resourceAssignmentExpression></bpmn:potentialOwner>
  <bpmn:potentialOwner><bpmn:resourceAssignmentExpression><bpmn:formalExpression>user( gonzo ),,user()</bpmn:formalExpression></bpmn:resourceAssignmentExpression></bpmn:potentialOwner>
</bpmn:userTask>`))
	n := node(t, p, "t")
	want := model.Human{Assignee: "${owner}", CandidateUsers: `"kermit, gonzo"`, CandidateGroups: `"management, sales"`}
	if got := humanOf(t, n); got != want {
		t.Errorf("human\n got %+v\nwant %+v", got, want)
	}
	evals(t, n, map[string]any{"owner": "piggy"}, map[model.HumanField]any{model.AssigneeField: "piggy",
		model.CandidateUsersField: "kermit, gonzo", model.CandidateGroupsField: "management, sales"})

	// A performer naming a <resource> is descriptive (MIWG), as in Camunda 7.
	p = mustParse(t, around(`<bpmn:userTask id="t"><bpmn:potentialOwner id="po"><bpmn:resourceRef>r</bpmn:resourceRef></bpmn:potentialOwner>
  <bpmn:performer id="pf"><bpmn:resourceRef>r</bpmn:resourceRef></bpmn:performer></bpmn:userTask>`))
	if h := node(t, p, "t").Human; h != nil {
		t.Errorf("human %+v, want none", h)
	}
}

// The same Zeebe task, job-based (no marker) and a Camunda user task
// (<zeebe:userTask/>), imports the same way.
func TestZeebeUserTaskStatic(t *testing.T) {
	for _, marker := range []string{"", "<zeebe:userTask/>"} {
		p := mustParse(t, around(`<bpmn:userTask id="t"><bpmn:extensionElements>`+marker+`
  <zeebe:assignmentDefinition assignee="alice" candidateUsers="bob, carol" candidateGroups="sales, ops"/>
  <zeebe:taskSchedule dueDate="2025-06-30T17:00:00Z" followUpDate="2025-06-29T09:00:00+02:00"/>
  <zeebe:priorityDefinition priority="70"/>
  <zeebe:formDefinition formId="review-form" bindingType="versionTag" versionTag="v1"/>
</bpmn:extensionElements></bpmn:userTask>`))
		n := node(t, p, "t")
		want := model.Human{Assignee: `"alice"`, CandidateUsers: `"bob, carol"`, CandidateGroups: `"sales, ops"`,
			DueDate: `"2025-06-30T17:00:00Z"`, FollowUpDate: `"2025-06-29T09:00:00+02:00"`, Priority: `70`, FormID: "review-form"}
		if got := humanOf(t, n); got != want {
			t.Errorf("marker %q: human\n got %+v\nwant %+v", marker, got, want)
		}
		evals(t, n, nil, map[model.HumanField]any{model.AssigneeField: "alice", model.CandidateUsersField: "bob, carol",
			model.CandidateGroupsField: "sales, ops", model.DueDateField: "2025-06-30T17:00:00Z",
			model.FollowUpDateField: "2025-06-29T09:00:00+02:00", model.PriorityField: 70})
	}
}

func TestZeebeUserTaskExpressions(t *testing.T) {
	p := mustParse(t, around(`<bpmn:userTask id="t"><bpmn:extensionElements><zeebe:userTask/>
  <zeebe:assignmentDefinition assignee="= requester" candidateUsers="=[&quot;erin&quot;, boss]" candidateGroups="=dept"/>
  <zeebe:taskSchedule dueDate="=due" followUpDate="=followUp"/>
  <zeebe:priorityDefinition priority="=if urgent then 90 else 40"/>
  <zeebe:formDefinition externalReference="https://forms.example.com/review"/>
</bpmn:extensionElements></bpmn:userTask>`))
	n := node(t, p, "t")
	want := model.Human{Assignee: "= requester", CandidateUsers: `=["erin", boss]`, CandidateGroups: "=dept",
		DueDate: "=due", FollowUpDate: "=followUp", Priority: "=if urgent then 90 else 40",
		ExternalReference: "https://forms.example.com/review"}
	if got := humanOf(t, n); got != want {
		t.Errorf("human\n got %+v\nwant %+v", got, want)
	}
	vars := map[string]any{"requester": "dave", "boss": "frank", "dept": []any{"legal"},
		"due": "2025-07-01T12:00:00Z", "followUp": "2025-06-30T12:00:00Z", "urgent": false}
	evals(t, n, vars, map[model.HumanField]any{model.AssigneeField: "dave", model.CandidateUsersField: []any{"erin", "frank"},
		model.CandidateGroupsField: []any{"legal"}, model.DueDateField: "2025-07-01T12:00:00Z",
		model.FollowUpDateField: "2025-06-30T12:00:00Z", model.PriorityField: 40})
}

// A job-based Zeebe user task's legacy form: a formKey naming the
// process's zeebe:userTaskForm, kept as written, and the form read.
func TestZeebeLegacyForm(t *testing.T) {
	p := mustParse(t, doc(`<bpmn:process id="p" isExecutable="true">
<bpmn:extensionElements><zeebe:userTaskForm id="userTaskForm_1">{"components": []}</zeebe:userTaskForm></bpmn:extensionElements>
<bpmn:startEvent id="s"><bpmn:extensionElements><zeebe:formDefinition formKey="camunda-forms:bpmn:startForm"/></bpmn:extensionElements></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<bpmn:userTask id="t"><bpmn:extensionElements>
  <zeebe:formDefinition formKey="camunda-forms:bpmn:userTaskForm_1"/>
  <zeebe:ioMapping><zeebe:input source="=order.id" target="orderId"/><zeebe:output source="=approved" target="ok"/></zeebe:ioMapping>
</bpmn:extensionElements></bpmn:userTask>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
<bpmn:endEvent id="e"/>
</bpmn:process>`))
	n := node(t, p, "t")
	if got, want := humanOf(t, n), (model.Human{FormKey: "camunda-forms:bpmn:userTaskForm_1", Form: `{"components":[]}`}); got != want {
		t.Errorf("human %+v, want %+v", got, want)
	}
	evals(t, n, nil, nil)
	if len(n.Inputs) != 1 || n.Inputs[0].Target != "orderId" || n.Inputs[0].Source != "=order.id" ||
		len(n.Outputs) != 1 || n.Outputs[0].Target != "ok" || n.Outputs[0].Source != "=approved" {
		t.Errorf("mappings %+v %+v", n.Inputs, n.Outputs)
	}
	if h := node(t, p, "s").Human; h != nil {
		t.Errorf("start event human %+v", h)
	}
}

// A user task without assignment has no Human; the modeller's metadata is
// ignored.
func TestUserTaskWithoutAssignment(t *testing.T) {
	for _, src := range []string{
		`<bpmn:userTask id="t"/>`,
		`<bpmn:userTask id="t" camunda:assignee="" camunda:asyncBefore="true"><bpmn:extensionElements>
  <camunda:properties><camunda:property name="a" value="b"/></camunda:properties>
</bpmn:extensionElements></bpmn:userTask>`,
		`<bpmn:userTask id="t"><bpmn:extensionElements><zeebe:userTask/><zeebe:assignmentDefinition assignee=""/>
  <zeebe:properties><zeebe:property name="a" value="b"/></zeebe:properties></bpmn:extensionElements></bpmn:userTask>`,
	} {
		n := node(t, mustParse(t, around(src)), "t")
		if n.Kind != model.UserTask || n.Human != nil {
			t.Errorf("%s: %s with %+v, want a user task without Human", src, n.Kind, n.Human)
		}
	}
}

func TestCamunda7UserTaskMappings(t *testing.T) {
	n := node(t, mustParse(t, around(`<bpmn:userTask id="t" camunda:assignee="alice"><bpmn:extensionElements><camunda:inputOutput>
  <camunda:inputParameter name="amount">${order.total}</camunda:inputParameter>
  <camunda:outputParameter name="approved">${decision == 'yes'}</camunda:outputParameter>
</camunda:inputOutput></bpmn:extensionElements></bpmn:userTask>`)), "t")
	if len(n.Inputs) != 1 || n.Inputs[0].Target != "amount" || n.Inputs[0].Source != "${order.total}" ||
		len(n.Outputs) != 1 || n.Outputs[0].Target != "approved" || n.Outputs[0].Source != "${decision == 'yes'}" {
		t.Errorf("mappings %+v %+v", n.Inputs, n.Outputs)
	}
}

// A user task takes an incident retry policy like any activity.
func TestUserTaskIncidentRetry(t *testing.T) {
	n := node(t, mustParse(t, around(`<bpmn:userTask id="t" camunda:assignee="${owner}"><bpmn:extensionElements>
  <jetbpm:incidentRetry kind="fixed" maxAttempts="2" delay="PT10S"/></bpmn:extensionElements></bpmn:userTask>`)), "t")
	if r := n.IncidentRetry; r == nil || r.MaxAttempts != 2 {
		t.Errorf("incident retry %+v", n.IncidentRetry)
	}
}

// A multi-instance user task (one task per element) and boundary events
// on user tasks import with the existing loop and boundary code.
func TestUserTaskLoopAndBoundaries(t *testing.T) {
	p := mustParse(t, withMessages(zeebeMessage("m", "withdrawn", "=requestId")+`<bpmn:error id="err" errorCode="REJECTED"/>`,
		proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
<bpmn:userTask id="approve" camunda:assignee="${approver}">
  <bpmn:multiInstanceLoopCharacteristics camunda:collection="approvers" camunda:elementVariable="approver">
    <bpmn:completionCondition>${nrOfCompletedInstances >= 2}</bpmn:completionCondition>
  </bpmn:multiInstanceLoopCharacteristics>
</bpmn:userTask>
<bpmn:boundaryEvent id="remind" attachedToRef="approve" cancelActivity="false">
  <bpmn:timerEventDefinition><bpmn:timeCycle>R3/PT24H</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:boundaryEvent>
<bpmn:boundaryEvent id="timeout" attachedToRef="approve">
  <bpmn:timerEventDefinition><bpmn:timeDuration>PT72H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
<bpmn:boundaryEvent id="withdrawn" attachedToRef="approve"><bpmn:messageEventDefinition messageRef="m"/></bpmn:boundaryEvent>
<bpmn:boundaryEvent id="rejected" attachedToRef="approve"><bpmn:errorEventDefinition errorRef="err"/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="review"/>
<bpmn:userTask id="review"><bpmn:extensionElements>
  <zeebe:assignmentDefinition assignee="=reviewer"/>
</bpmn:extensionElements>
  <bpmn:multiInstanceLoopCharacteristics isSequential="true"><bpmn:extensionElements>
    <zeebe:loopCharacteristics inputCollection="=reviewers" inputElement="reviewer" outputCollection="reviews" outputElement="=review"/>
  </bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>
</bpmn:userTask>
<bpmn:sequenceFlow id="f3" sourceRef="review" targetRef="e"/>
<bpmn:sequenceFlow id="f4" sourceRef="remind" targetRef="e"/>
<bpmn:sequenceFlow id="f5" sourceRef="timeout" targetRef="e"/>
<bpmn:sequenceFlow id="f6" sourceRef="withdrawn" targetRef="e"/>
<bpmn:sequenceFlow id="f7" sourceRef="rejected" targetRef="e"/>
<bpmn:endEvent id="e"/>`)))
	approve := node(t, p, "approve")
	if l := approve.Loop; l == nil || l.Sequential || l.Collection != "approvers" || l.ElementVariable != "approver" {
		t.Errorf("approve loop %+v", approve.Loop)
	}
	evals(t, approve, map[string]any{"approver": "alice"}, map[model.HumanField]any{model.AssigneeField: "alice"})
	review := node(t, p, "review")
	if l := review.Loop; l == nil || !l.Sequential || l.Collection != "=reviewers" || l.ElementVariable != "reviewer" || l.OutputCollection != "reviews" {
		t.Errorf("review loop %+v", review.Loop)
	}
	evals(t, review, map[string]any{"reviewer": "bob"}, map[model.HumanField]any{model.AssigneeField: "bob"})
	for _, b := range []struct {
		id           string
		ev           model.EventType
		interrupting bool
	}{{"remind", model.TimerEvent, false}, {"timeout", model.TimerEvent, true}, {"withdrawn", model.MessageEvent, true}, {"rejected", model.ErrorEvent, true}} {
		n := node(t, p, b.id)
		if n.Kind != model.BoundaryEvent || n.AttachedTo != "approve" || n.Event != b.ev || n.Interrupting != b.interrupting {
			t.Errorf("%s: %s %q on %q interrupting %v", b.id, n.Kind, n.Event, n.AttachedTo, n.Interrupting)
		}
	}
	if ids := boundaryIDs(p.Boundaries("approve")); !reflect.DeepEqual(ids, []string{"remind", "timeout", "withdrawn", "rejected"}) {
		t.Errorf("boundaries of approve %v", ids)
	}
}

func boundaryIDs(ns []*model.Node) []string {
	var ids []string
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	return ids
}

// The import is what the Go builder makes.
func TestUserTaskMatchesBuilder(t *testing.T) {
	p := mustParse(t, around(`<bpmn:userTask id="t" name="Approve" camunda:assignee="${owner}" camunda:candidateGroups="sales" camunda:priority="80" camunda:formKey="approve"/>`))
	h := model.Human{Assignee: "${owner}", CandidateGroups: `"sales"`, Priority: "80", FormKey: "approve"}
	b, err := model.NewBuilder("p").StartEvent("s").UserTask("t", model.WithHuman(h)).EndEvent("e").
		Sequence("s", "t", "e").Build()
	if err != nil {
		t.Fatal(err)
	}
	got, want := node(t, p, "t"), b.Node("t")
	if got.Kind != want.Kind || humanOf(t, got) != humanOf(t, want) {
		t.Errorf("imported %+v %+v\nbuilt %+v %+v", got, got.Human, want, want.Human)
	}
}

func TestUserTaskRefusals(t *testing.T) {
	zeebe := func(ext string) string {
		return around(`<bpmn:userTask id="t"><bpmn:extensionElements>
  ` + ext + `</bpmn:extensionElements></bpmn:userTask>`)
	}
	cases := []struct {
		name, src string
		marker    string // the error's line is this text's line
		msg       string
	}{
		{"camunda unclosed composite", around(`<bpmn:userTask id="t"
  camunda:assignee="user-${id"/>`), "<bpmn:userTask", `camunda:assignee="user-${id": expression "user-${id": missing closing "}"`},
		{"camunda method call", around(`<bpmn:userTask id="t" camunda:candidateUsers="${users.find(x)}"/>`), "<bpmn:userTask",
			`camunda:candidateUsers="${users.find(x)}": expression "${users.find(x)}": unsupported JUEL method call`},
		{"camunda priority", around(`<bpmn:userTask id="t" camunda:priority="high"/>`), "<bpmn:userTask",
			`camunda:priority="high": the priority is an integer from 0 to 100`},
		{"camunda priority range", around(`<bpmn:userTask id="t" camunda:priority="101"/>`), "<bpmn:userTask",
			`camunda:priority="101": the priority is an integer from 0 to 100`},
		{"camunda date without zone", around(`<bpmn:userTask id="t" camunda:dueDate="2025-06-30T17:00:00"/>`), "<bpmn:userTask",
			`camunda:dueDate="2025-06-30T17:00:00": not an ISO 8601 date-time with a time zone`},
		{"camunda relative date", around(`<bpmn:userTask id="t" camunda:followUpDate="P2D"/>`), "<bpmn:userTask",
			`camunda:followUpDate="P2D": relative dates (ISO 8601 durations) are not supported`},
		{"camunda two forms", around(`<bpmn:userTask id="t" camunda:formKey="a" camunda:formRef="b"/>`), "<bpmn:userTask",
			"camunda:formRef: the form is already named by camunda:formKey; keep one"},
		{"camunda empty form", around(`<bpmn:userTask id="t" camunda:formKey=" "/>`), "<bpmn:userTask", "camunda:formKey is empty"},
		{"form handler", around(`<bpmn:userTask id="t" camunda:formHandlerClass="org.example.Handler"/>`), "<bpmn:userTask",
			"camunda:formHandlerClass runs Java code on the task's form; not supported"},
		{"task listener", zeebe(`<camunda:taskListener event="create" class="org.example.Notify"/>`), "<camunda:taskListener",
			"camunda:taskListener: a task listener with camunda:class runs Java code, which jetbpm cannot run"},
		{"timeout task listener without a timer", zeebe(`<camunda:taskListener event="timeout" expression="${x}"/>`), "<camunda:taskListener",
			`camunda:taskListener: a timeout task listener needs a timerEventDefinition`},
		{"timeout task listener with an empty timer", zeebe(`<camunda:taskListener event="timeout" expression="${x}">
  <bpmn:timerEventDefinition/></camunda:taskListener>`), "<bpmn:timerEventDefinition",
			`bpmn:timerEventDefinition: a timeout task listener's timerEventDefinition needs a timeDuration, timeDate or timeCycle`},
		{"timeout task listener in Java", zeebe(`<camunda:taskListener event="timeout" id="remind" class="org.example.Remind">
  <bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></camunda:taskListener>`), "<camunda:taskListener",
			"camunda:taskListener: a task listener with camunda:class runs Java code"},
		{"task listener without event", zeebe(`<camunda:taskListener expression="${x}"/>`), "<camunda:taskListener",
			"a task listener needs an event (create, assignment, update, complete, delete or timeout)"},
		{"task listener calling a bean", zeebe(`<camunda:taskListener event="create" expression="${task.setDescription('x')}"/>`), "<camunda:taskListener",
			`the calls jetbpm runs here are`},
		{"humanPerformer and assignee", around(`<bpmn:userTask id="t" camunda:assignee="alice"><bpmn:humanPerformer><bpmn:resourceAssignmentExpression>
  <bpmn:formalExpression>bob</bpmn:formalExpression></bpmn:resourceAssignmentExpression></bpmn:humanPerformer></bpmn:userTask>`), "<bpmn:formalExpression",
			"bpmn:formalExpression: bpmn:humanPerformer: the assignee is already set by camunda:assignee; keep one"},
		{"potentialOwner expression", around(`<bpmn:userTask id="t"><bpmn:potentialOwner><bpmn:resourceAssignmentExpression>
  <bpmn:formalExpression>group(${dept})</bpmn:formalExpression></bpmn:resourceAssignmentExpression></bpmn:potentialOwner></bpmn:userTask>`), "<bpmn:formalExpression",
			`potentialOwner "group(${dept})": expressions are not supported here; use camunda:candidateUsers or camunda:candidateGroups`},
		{"zeebe bad FEEL", zeebe(`<zeebe:assignmentDefinition assignee="=upper case(" />`), "<zeebe:assignmentDefinition",
			`zeebe:assignmentDefinition: assignee="=upper case(": expression`},
		{"zeebe priority", zeebe(`<zeebe:priorityDefinition priority="-1"/>`), "<zeebe:priorityDefinition",
			`zeebe:priorityDefinition: priority="-1": the priority is an integer from 0 to 100`},
		{"zeebe date", zeebe(`<zeebe:taskSchedule dueDate="tomorrow"/>`), "<zeebe:taskSchedule",
			`zeebe:taskSchedule: dueDate="tomorrow": not an ISO 8601 date-time with a time zone`},
		{"zeebe and camunda assignee", around(`<bpmn:userTask id="t" camunda:assignee="alice"><bpmn:extensionElements>
  <zeebe:assignmentDefinition assignee="bob"/></bpmn:extensionElements></bpmn:userTask>`), "<zeebe:assignmentDefinition",
			"zeebe:assignmentDefinition: assignee: the assignee is already set by camunda:assignee; keep one"},
		{"zeebe twice", zeebe(`<zeebe:taskSchedule dueDate="=a"/>
  <zeebe:taskSchedule followUpDate="=b"/>`), "<zeebe:taskSchedule followUpDate", "zeebe:taskSchedule: appears twice in the userTask; keep one"},
		{"zeebe two forms", zeebe(`<zeebe:formDefinition formId="a" externalReference="b"/>`), "<zeebe:formDefinition",
			"zeebe:formDefinition: externalReference: the form is already named by formId; keep one"},
		{"zeebe no form", zeebe(`<zeebe:formDefinition bindingType="latest"/>`), "<zeebe:formDefinition",
			"zeebe:formDefinition: names no form: give formKey, formId or externalReference"},
		{"zeebe and camunda form", around(`<bpmn:userTask id="t" camunda:formKey="a"><bpmn:extensionElements>
  <zeebe:formDefinition formId="b"/></bpmn:extensionElements></bpmn:userTask>`), "<zeebe:formDefinition",
			"zeebe:formDefinition: formId: the form is already named by camunda:formKey; keep one"},
		{"zeebe headers", zeebe(`<zeebe:taskHeaders><zeebe:header key="a" value="b"/></zeebe:taskHeaders>`), "<zeebe:taskHeaders",
			"zeebe:taskHeaders: a user task is not a job"},
		{"zeebe canceling task listener", zeebe(`<zeebe:taskListeners><zeebe:taskListener eventType="canceling" type="audit"/></zeebe:taskListeners>`),
			"<zeebe:taskListener ", `eventType canceling: canceling listeners are not run yet`},
		{"zeebe job", zeebe(`<zeebe:taskDefinition type="x"/>`), "<zeebe:taskDefinition",
			"zeebe:taskDefinition: applies to service tasks, send tasks and message throw events only"},
		{"assignment on a service task", around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x"/>
  <zeebe:assignmentDefinition assignee="alice"/></bpmn:extensionElements></bpmn:serviceTask>`), "<zeebe:assignmentDefinition",
			"zeebe:assignmentDefinition: applies to user tasks only"},
		{"marker on a task", around(`<bpmn:task id="t"><bpmn:extensionElements>
  <zeebe:userTask/></bpmn:extensionElements></bpmn:task>`), "<zeebe:userTask", "zeebe:userTask: applies to user tasks only"},
		{"jetbpm worker", zeebe(`<jetbpm:worker topic="x"/>`), "<jetbpm:worker",
			"jetbpm:worker: applies to external service tasks, send tasks and message throw events only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := importError(t, parseErr(t, c.src))
			if e.ID != "t" || !strings.Contains(e.Msg, c.msg) || e.Line != lineOf(t, c.src, c.marker) {
				t.Errorf("got %v\nwant <... id=\"t\"> at line %d: ...%s", e, lineOf(t, c.src, c.marker), c.msg)
			}
		})
	}
}
