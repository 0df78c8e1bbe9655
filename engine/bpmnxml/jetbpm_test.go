package bpmnxml

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/jobs"
)

// zeebeTask is an external service task "t" (zeebe:taskDefinition type
// "x") with more extension elements.
func zeebeTask(ext string) string {
	return around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="x"/>
` + ext + `
</bpmn:extensionElements></bpmn:serviceTask>`)
}

// extTask is service task "t" with attributes attrs and extension elements.
func extTask(attrs, ext string) string {
	return around(`<bpmn:serviceTask id="t" ` + attrs + `><bpmn:extensionElements>
` + ext + `
</bpmn:extensionElements></bpmn:serviceTask>`)
}

func TestJetbpmAllOptions(t *testing.T) {
	p := mustParse(t, extTask(``, `
  <jetbpm:worker topic="payments" trust="engineAuthoritative" lockDuration="PT2M" maxLockDuration="PT1H"/>
  <jetbpm:retryPolicy kind="exponential" maxAttempts="5" base="PT0.5S" cap="PT30S" jitter="0.2"/>
  <jetbpm:errorMapper>
    <jetbpm:rule code="404" when="body.type == 'NOT_FOUND'" status="NOT_FOUND"/>
    <jetbpm:rule code="409" bpmnError="ResourceConflict" message="already exists"/>
    <jetbpm:rule code="500" technical="true"/>
    <jetbpm:rule code="404" statusFrom="body.state"/>
    <jetbpm:rule technical="true"/>
  </jetbpm:errorMapper>
  <jetbpm:outputMapping>
    <jetbpm:output path="body.data.id" variable="orderId" required="true"/>
    <jetbpm:output path="=body.total" variable="total"/>
  </jetbpm:outputMapping>
  <jetbpm:status variable="lookupResult" overwrite="false"/>`))
	n := node(t, p, "t")
	if !n.IsExternal() || n.Service.Worker.Topic != "payments" || n.Service.Operation != "" {
		t.Fatalf("service %+v", n.Service)
	}
	want := jobs.Overrides{
		Trust: jobs.EngineAuthoritative,
		Retry: &jobs.RetrySpec{Kind: jobs.RetryExponential, MaxAttempts: 5, Base: 500 * time.Millisecond, Cap: 30 * time.Second, Jitter: 0.2},
		Rules: []jobs.Rule{
			{Code: "404", When: "body.type == 'NOT_FOUND'", Outcome: jobs.BusinessStatus, Value: "NOT_FOUND"},
			{Code: "409", Outcome: jobs.BusinessError, ErrorCode: "ResourceConflict", Message: "already exists"},
			{Code: "500", Outcome: jobs.Technical},
			{Code: "404", Outcome: jobs.BusinessStatus, ValueFrom: "body.state"},
			{Outcome: jobs.Technical},
		},
		Outputs: []jobs.OutputRule{
			{Path: "body.data.id", Variable: "orderId", Required: true},
			{Path: "=body.total", Variable: "total"},
		},
		Status:          "lookupResult",
		LockDuration:    2 * time.Minute,
		MaxLockDuration: time.Hour,
	}
	if got := n.Service.Worker.Overrides(); !reflect.DeepEqual(got, want) {
		t.Fatalf("options\n got %+v\nwant %+v", got, want)
	}
	pol := n.Service.Worker.Overrides().Resolve(jobs.Overrides{})
	if pol.Trust != jobs.EngineAuthoritative || pol.Retry.MaxAttempts != 5 || pol.LockDuration != 2*time.Minute {
		t.Errorf("resolved %+v", pol)
	}
}

func TestJetbpmWorker(t *testing.T) {
	// Alone, jetbpm:worker makes the task external.
	p := mustParse(t, extTask(``, `<jetbpm:worker topic=" payments "/>`))
	w := node(t, p, "t").Service.Worker
	if w == nil || w.Topic != "payments" || !reflect.DeepEqual(w.Options, jobs.Overrides{}) {
		t.Fatalf("worker %+v", w)
	}
	// Without a topic it configures a Camunda 7 external task...
	p = mustParse(t, extTask(`camunda:type="external" camunda:topic="charge"`, `<jetbpm:worker trust="workerTrusted" lockDuration="PT30S"/>`))
	w = node(t, p, "t").Service.Worker
	if w.Topic != "charge" || w.Options.Trust != jobs.WorkerTrusted || w.Options.LockDuration != 30*time.Second || w.Options.MaxLockDuration != 0 {
		t.Fatalf("worker %+v", w)
	}
	// ... or a Zeebe job worker, wherever the taskDefinition comes.
	p = mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <jetbpm:worker maxLockDuration="PT10M"/>
  <zeebe:taskDefinition type="z" retries="4"/>
  <zeebe:taskHeaders><zeebe:header key="k" value="v"/></zeebe:taskHeaders>
</bpmn:extensionElements></bpmn:serviceTask>`))
	w = node(t, p, "t").Service.Worker
	if w.Topic != "z" || w.Retries != 4 || w.Options.MaxLockDuration != 10*time.Minute || w.Headers["k"] != "v" {
		t.Fatalf("worker %+v", w)
	}
	// zeebe:taskHeaders apply to a jetbpm:worker too; other namespaces'
	// attributes and namespace declarations are ignored.
	p = mustParse(t, extTask(``, `<jetbpm:worker xmlns:other="urn:x" other:color="red" topic="h"/>
  <zeebe:taskHeaders><zeebe:header key="a" value="b"/></zeebe:taskHeaders>`))
	if w := node(t, p, "t").Service.Worker; w.Topic != "h" || w.Headers["a"] != "b" {
		t.Fatalf("worker %+v", w)
	}
}

// Camunda 7 and Zeebe external tasks map to model.Worker; Zeebe's retries
// become the attempts of the default retry policy.
func TestVendorRetries(t *testing.T) {
	p := mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="pay" retries="5"/></bpmn:extensionElements></bpmn:serviceTask>`))
	w := node(t, p, "t").Service.Worker
	o := w.Overrides()
	if w.Topic != "pay" || w.Retries != 5 || o.Retry == nil || o.Retry.MaxAttempts != 5 || o.Retry.Kind != jobs.DefaultRetrySpec.Kind || o.Retry.Base != jobs.DefaultRetrySpec.Base {
		t.Fatalf("worker %+v, overrides %+v", w, o.Retry)
	}
	if pol := o.Resolve(jobs.Overrides{}); pol.Retry.MaxAttempts != 5 {
		t.Errorf("resolved %+v", pol.Retry)
	}
	p = mustParse(t, around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="pay"/>`))
	w = node(t, p, "t").Service.Worker
	if w.Topic != "pay" || w.Retries != 0 || w.Overrides().Retry != nil {
		t.Fatalf("worker %+v", w)
	}
	if pol := w.Overrides().Resolve(jobs.Overrides{}); pol.Retry != jobs.DefaultRetrySpec {
		t.Errorf("resolved %+v", pol.Retry)
	}
}

func TestJetbpmRetryPolicy(t *testing.T) {
	def := jobs.DefaultRetrySpec
	cases := []struct {
		task string
		want jobs.RetrySpec
	}{
		{zeebeTask(`<jetbpm:retryPolicy kind="none"/>`), jobs.NoRetrySpec()},
		{zeebeTask(`<jetbpm:retryPolicy kind="none" maxAttempts="1"/>`), jobs.NoRetrySpec()},
		{zeebeTask(`<jetbpm:retryPolicy kind="fixed" maxAttempts="4" delay="PT1S"/>`), jobs.FixedDelaySpec(4, time.Second)},
		{zeebeTask(`<jetbpm:retryPolicy kind="fixed" delay="PT0S"/>`), jobs.FixedDelaySpec(3, 0)},
		{zeebeTask(`<jetbpm:retryPolicy kind="exponential"/>`), def},
		{zeebeTask(`<jetbpm:retryPolicy kind="exponential" maxAttempts="10" cap="PT5M"/>`), jobs.ExponentialSpec(10, def.Base, 5*time.Minute, def.Jitter)},
		{zeebeTask(`<jetbpm:retryPolicy kind="exponential" base="PT1S" cap="PT1M" jitter="0"/>`), jobs.ExponentialSpec(3, time.Second, time.Minute, 0)},
		{zeebeTask(`<jetbpm:retryPolicy kind="custom" name="paymentsBackoff" maxAttempts="7"/>`), jobs.CustomRetrySpec("paymentsBackoff", 7)},
		{zeebeTask(`<jetbpm:retryPolicy kind="custom" name="p"/>`), jobs.CustomRetrySpec("p", 3)},
		// maxAttempts defaults to the zeebe:taskDefinition retries.
		{around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x" retries="6"/>
  <jetbpm:retryPolicy kind="fixed" delay="PT2S"/></bpmn:extensionElements></bpmn:serviceTask>`), jobs.FixedDelaySpec(6, 2*time.Second)},
		{around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x" retries="6"/>
  <jetbpm:retryPolicy kind="exponential" maxAttempts="6"/></bpmn:extensionElements></bpmn:serviceTask>`), jobs.ExponentialSpec(6, def.Base, def.Cap, def.Jitter)},
		{extTask(`camunda:type="external" camunda:topic="c"`, `<jetbpm:retryPolicy kind="fixed" maxAttempts="2" delay="PT1M30S"/>`), jobs.FixedDelaySpec(2, 90*time.Second)},
	}
	for _, c := range cases {
		p := mustParse(t, c.task)
		got := node(t, p, "t").Service.Worker.Overrides().Retry
		if got == nil || *got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.task, got, c.want)
		}
	}
}

func TestJetbpmErrorMapperCustom(t *testing.T) {
	p := mustParse(t, zeebeTask(`<jetbpm:errorMapper custom="httpFaults"/>`))
	o := node(t, p, "t").Service.Worker.Options
	if o.Mapper != "httpFaults" || o.Rules != nil {
		t.Fatalf("options %+v", o)
	}
	if pol := o.Resolve(jobs.Overrides{}); pol.Trust != jobs.EngineAuthoritative {
		t.Errorf("a custom mapper runs engine-side: %+v", pol)
	}
	// An explicit engineAuthoritative agrees with it.
	mustParse(t, zeebeTask(`<jetbpm:worker trust="engineAuthoritative"/><jetbpm:errorMapper custom="httpFaults"/>`))
}

func TestJetbpmStatusAndOutputs(t *testing.T) {
	p := mustParse(t, zeebeTask(`<jetbpm:status variable="result" overwrite="true"/>
  <jetbpm:outputMapping><jetbpm:output path="${body.id}" variable="id" required="false"/></jetbpm:outputMapping>`))
	o := node(t, p, "t").Service.Worker.Options
	if o.Status != "result" || !o.StatusOverwrite || len(o.Outputs) != 1 || o.Outputs[0] != (jobs.OutputRule{Path: "${body.id}", Variable: "id"}) {
		t.Fatalf("options %+v", o)
	}
	p = mustParse(t, zeebeTask(`<jetbpm:status variable="r"/>`))
	if o := node(t, p, "t").Service.Worker.Options; o.Status != "r" || o.StatusOverwrite {
		t.Fatalf("options %+v", o)
	}
}

// Every jetbpm extension problem names the service task, its id, and the
// line of the offending extension element.
func TestJetbpmRefusals(t *testing.T) {
	cases := []struct {
		name, src string
		marker    string // the error's line is this text's line
		msg       string
	}{
		// jetbpm:worker
		{"worker unknown attribute", extTask(``, `<jetbpm:worker topic="a" retries="3"/>`), "<jetbpm:worker", `unknown attribute retries (jetbpm:worker takes attributes topic, trust, lockDuration, maxLockDuration)`},
		{"worker qualified attribute", extTask(``, `<jetbpm:worker jetbpm:topic="a"/>`), "<jetbpm:worker", `unknown attribute jetbpm:topic`},
		{"worker empty topic", extTask(``, `<jetbpm:worker topic=" "/>`), "<jetbpm:worker", "jetbpm:worker: topic is empty"},
		{"worker without topic", extTask(``, `<jetbpm:worker trust="workerTrusted"/>`), "<jetbpm:worker", "has no topic and the task is not external otherwise"},
		{"worker topic and camunda", extTask(`camunda:type="external" camunda:topic="c"`, `<jetbpm:worker topic="a"/>`), "<jetbpm:worker", "already external"},
		{"worker topic and zeebe", zeebeTask(`<jetbpm:worker topic="a"/>`), "<jetbpm:worker", "already external"},
		{"worker trust", zeebeTask(`<jetbpm:worker trust="trusted"/>`), "<jetbpm:worker", `trust="trusted" is neither "workerTrusted" nor "engineAuthoritative"`},
		{"worker lock syntax", zeebeTask(`<jetbpm:worker lockDuration="2m"/>`), "<jetbpm:worker", `lockDuration="2m": duration "2m" is not ISO-8601`},
		{"worker lock days", zeebeTask(`<jetbpm:worker lockDuration="P1D"/>`), "<jetbpm:worker", `lockDuration="P1D": use hours, minutes and seconds only`},
		{"worker lock zero", zeebeTask(`<jetbpm:worker lockDuration="PT0S"/>`), "<jetbpm:worker", `lockDuration="PT0S": must be positive`},
		{"worker max lock", zeebeTask(`<jetbpm:worker maxLockDuration="P1W"/>`), "<jetbpm:worker", `maxLockDuration="P1W": use hours`},
		{"worker max below lock", zeebeTask(`<jetbpm:worker lockDuration="PT5M" maxLockDuration="PT1M"/>`), "<jetbpm:worker", "maxLockDuration 1m0s is shorter than lockDuration 5m0s"},
		{"worker child", zeebeTask(`<jetbpm:worker>
  <jetbpm:header key="a"/></jetbpm:worker>`), "<jetbpm:header", "jetbpm:header: not supported inside jetbpm:worker"},
		{"worker twice", zeebeTask(`<jetbpm:worker trust="workerTrusted"/>
  <jetbpm:worker lockDuration="PT1M"/>`), "<jetbpm:worker lockDuration", "appears twice in the task"},
		{"trusted custom mapper", zeebeTask(`<jetbpm:worker trust="workerTrusted"/><jetbpm:errorMapper custom="m"/>`), "<jetbpm:worker", `contradicts the custom error mapper "m"`},

		// jetbpm:retryPolicy
		{"retry no kind", zeebeTask(`<jetbpm:retryPolicy maxAttempts="3"/>`), "<jetbpm:retryPolicy", `kind="" is not one of none, fixed, exponential, custom`},
		{"retry unknown kind", zeebeTask(`<jetbpm:retryPolicy kind="linear"/>`), "<jetbpm:retryPolicy", `kind="linear" is not one of`},
		{"retry unknown attribute", zeebeTask(`<jetbpm:retryPolicy kind="fixed" delay="PT1S" backoff="2"/>`), "<jetbpm:retryPolicy", "unknown attribute backoff"},
		{"retry attribute of another kind", zeebeTask(`<jetbpm:retryPolicy kind="exponential" delay="PT1S"/>`), "<jetbpm:retryPolicy", `delay does not apply to kind="exponential"`},
		{"retry name on fixed", zeebeTask(`<jetbpm:retryPolicy kind="fixed" delay="PT1S" name="x"/>`), "<jetbpm:retryPolicy", `name does not apply to kind="fixed"`},
		{"retry jitter on none", zeebeTask(`<jetbpm:retryPolicy kind="none" jitter="0.1"/>`), "<jetbpm:retryPolicy", `jitter does not apply to kind="none"`},
		{"retry attempts zero", zeebeTask(`<jetbpm:retryPolicy kind="exponential" maxAttempts="0"/>`), "<jetbpm:retryPolicy", `maxAttempts="0" is not a positive integer`},
		{"retry attempts text", zeebeTask(`<jetbpm:retryPolicy kind="exponential" maxAttempts="many"/>`), "<jetbpm:retryPolicy", `maxAttempts="many" is not a positive integer`},
		{"retry none attempts", zeebeTask(`<jetbpm:retryPolicy kind="none" maxAttempts="2"/>`), "<jetbpm:retryPolicy", `kind="none" runs once`},
		{"retry fixed no delay", zeebeTask(`<jetbpm:retryPolicy kind="fixed" maxAttempts="2"/>`), "<jetbpm:retryPolicy", `kind="fixed" needs delay`},
		{"retry fixed bad delay", zeebeTask(`<jetbpm:retryPolicy kind="fixed" delay="-PT1S"/>`), "<jetbpm:retryPolicy", `delay="-PT1S": duration`},
		{"retry custom no name", zeebeTask(`<jetbpm:retryPolicy kind="custom"/>`), "<jetbpm:retryPolicy", `kind="custom" needs the name`},
		{"retry jitter range", zeebeTask(`<jetbpm:retryPolicy kind="exponential" jitter="1.5"/>`), "<jetbpm:retryPolicy", `jitter="1.5" is not a fraction in [0,1]`},
		{"retry jitter text", zeebeTask(`<jetbpm:retryPolicy kind="exponential" jitter="NaN"/>`), "<jetbpm:retryPolicy", `jitter="NaN" is not a fraction`},
		{"retry base over cap", zeebeTask(`<jetbpm:retryPolicy kind="exponential" base="PT1M" cap="PT1S"/>`), "<jetbpm:retryPolicy", "base 1m0s exceeds cap 1s"},
		{"retry base days", zeebeTask(`<jetbpm:retryPolicy kind="exponential" base="P1D"/>`), "<jetbpm:retryPolicy", `base="P1D": use hours, minutes and seconds only`},
		{"retry cap syntax", zeebeTask(`<jetbpm:retryPolicy kind="exponential" cap="30"/>`), "<jetbpm:retryPolicy", `cap="30": duration "30" is not ISO-8601`},
		{"retry contradicts zeebe", around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x" retries="3"/>
  <jetbpm:retryPolicy kind="fixed" maxAttempts="5" delay="PT1S"/></bpmn:extensionElements></bpmn:serviceTask>`), "<jetbpm:retryPolicy", `5 attempts contradict the zeebe:taskDefinition retries="3"`},
		{"retry none contradicts zeebe", around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x" retries="3"/>
  <jetbpm:retryPolicy kind="none"/></bpmn:extensionElements></bpmn:serviceTask>`), "<jetbpm:retryPolicy", `contradict the zeebe:taskDefinition retries="3"`},
		{"retry child", zeebeTask(`<jetbpm:retryPolicy kind="none">
  <jetbpm:rule technical="true"/></jetbpm:retryPolicy>`), "<jetbpm:rule", "jetbpm:rule: not supported inside jetbpm:retryPolicy"},

		// jetbpm:errorMapper and jetbpm:rule
		{"mapper empty", zeebeTask(`<jetbpm:errorMapper/>`), "<jetbpm:errorMapper", "has no jetbpm:rule and no custom mapper"},
		{"mapper empty custom", zeebeTask(`<jetbpm:errorMapper custom=""/>`), "<jetbpm:errorMapper", "custom is empty"},
		{"mapper custom and rules", zeebeTask(`<jetbpm:errorMapper custom="m">
  <jetbpm:rule technical="true"/></jetbpm:errorMapper>`), "<jetbpm:errorMapper", `has both custom="m" and rules`},
		{"mapper unknown attribute", zeebeTask(`<jetbpm:errorMapper default="technical"><jetbpm:rule technical="true"/></jetbpm:errorMapper>`), "<jetbpm:errorMapper", "unknown attribute default (jetbpm:errorMapper takes attributes custom)"},
		{"mapper foreign child", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:output path="body" variable="x"/></jetbpm:errorMapper>`), "<jetbpm:output", "jetbpm:output: not supported inside jetbpm:errorMapper (only jetbpm:rule)"},
		{"rule no outcome", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule code="500"/></jetbpm:errorMapper>`), "<jetbpm:rule", "jetbpm:rule: a rule has exactly one outcome: bpmnError, status, statusFrom or technical=\"true\" (got none)"},
		{"rule two outcomes", zeebeTask(`<jetbpm:status variable="s"/><jetbpm:errorMapper>
  <jetbpm:rule code="500" bpmnError="E" status="S"/></jetbpm:errorMapper>`), "<jetbpm:rule", "exactly one outcome: bpmnError, status, statusFrom or technical=\"true\" (got bpmnError, status)"},
		{"rule technical false", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule code="500" technical="false"/></jetbpm:errorMapper>`), "<jetbpm:rule", `technical="false": write technical="true"`},
		{"rule message without error", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule code="500" technical="true" message="m"/></jetbpm:errorMapper>`), "<jetbpm:rule", "message applies to a bpmnError rule only"},
		{"rule status without variable", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule code="404" status="NOT_FOUND"/></jetbpm:errorMapper>`), "<jetbpm:rule", `a status outcome needs <jetbpm:status variable="..."/>`},
		{"rule statusFrom without variable", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule code="404" statusFrom="body.state"/></jetbpm:errorMapper>`), "<jetbpm:rule", `a status outcome needs <jetbpm:status`},
		{"rule bad when", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule when="body.type ==" technical="true"/></jetbpm:errorMapper>`), "<jetbpm:rule", `when="body.type ==": expression`},
		{"rule bad statusFrom", zeebeTask(`<jetbpm:status variable="s"/><jetbpm:errorMapper>
  <jetbpm:rule statusFrom="body.(" /></jetbpm:errorMapper>`), "<jetbpm:rule", `statusFrom="body.(": expression`},
		{"rule empty code", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule code="" technical="true"/></jetbpm:errorMapper>`), "<jetbpm:rule", "code is empty"},
		{"rule empty bpmnError", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule code="1" bpmnError=" "/></jetbpm:errorMapper>`), "<jetbpm:rule", "bpmnError is empty"},
		{"rule unknown attribute", zeebeTask(`<jetbpm:errorMapper>
  <jetbpm:rule status_code="500" technical="true"/></jetbpm:errorMapper>`), "<jetbpm:rule", "unknown attribute status_code (jetbpm:rule takes attributes code, when, bpmnError, message, status, statusFrom, technical)"},
		{"rule child", zeebeTask(`<jetbpm:errorMapper><jetbpm:rule technical="true">
  <jetbpm:when/></jetbpm:rule></jetbpm:errorMapper>`), "<jetbpm:when", "jetbpm:when: not supported inside jetbpm:rule"},

		// jetbpm:outputMapping and jetbpm:output
		{"outputs empty", zeebeTask(`<jetbpm:outputMapping/>`), "<jetbpm:outputMapping", "has no jetbpm:output"},
		{"outputs attribute", zeebeTask(`<jetbpm:outputMapping strict="true"><jetbpm:output path="body" variable="x"/></jetbpm:outputMapping>`), "<jetbpm:outputMapping", "unknown attribute strict (jetbpm:outputMapping takes no attributes)"},
		{"outputs foreign child", zeebeTask(`<jetbpm:outputMapping>
  <zeebe:output source="=a" target="b"/></jetbpm:outputMapping>`), "<zeebe:output", "zeebe:output: not supported inside jetbpm:outputMapping (only jetbpm:output)"},
		{"output bad variable", zeebeTask(`<jetbpm:outputMapping>
  <jetbpm:output path="body.id" variable="order id"/></jetbpm:outputMapping>`), "<jetbpm:output ", `variable="order id" is not a variable name`},
		{"output no variable", zeebeTask(`<jetbpm:outputMapping>
  <jetbpm:output path="body.id"/></jetbpm:outputMapping>`), "<jetbpm:output ", `variable="" is not a variable name`},
		{"output twice", zeebeTask(`<jetbpm:outputMapping><jetbpm:output path="body.a" variable="x"/>
  <jetbpm:output path="body.b" variable="x"/></jetbpm:outputMapping>`), `"body.b"`, `variable "x" is mapped twice`},
		{"output no path", zeebeTask(`<jetbpm:outputMapping>
  <jetbpm:output variable="x"/></jetbpm:outputMapping>`), "<jetbpm:output ", `variable "x" has no path`},
		{"output bad path", zeebeTask(`<jetbpm:outputMapping>
  <jetbpm:output path="body.(" variable="x"/></jetbpm:outputMapping>`), "<jetbpm:output ", `path="body.(": expression`},
		{"output required", zeebeTask(`<jetbpm:outputMapping>
  <jetbpm:output path="body.id" variable="x" required="yes"/></jetbpm:outputMapping>`), "<jetbpm:output ", `required="yes" is not a boolean`},
		{"output unknown attribute", zeebeTask(`<jetbpm:outputMapping>
  <jetbpm:output source="body.id" variable="x"/></jetbpm:outputMapping>`), "<jetbpm:output ", `unknown attribute source`},

		// jetbpm:status
		{"status no variable", zeebeTask(`<jetbpm:status overwrite="true"/>`), "<jetbpm:status", `variable="" is not a variable name`},
		{"status bad variable", zeebeTask(`<jetbpm:status variable="1st"/>`), "<jetbpm:status", `variable="1st" is not a variable name`},
		{"status overwrite", zeebeTask(`<jetbpm:status variable="s" overwrite="always"/>`), "<jetbpm:status", `overwrite="always" is not a boolean`},
		{"status unknown attribute", zeebeTask(`<jetbpm:status name="s"/>`), "<jetbpm:status", `unknown attribute name`},

		// Job options need an external task.
		{"options on jetbpm:operation", extTask(`jetbpm:operation="charge"`, `<jetbpm:retryPolicy kind="none"/>`), "<jetbpm:retryPolicy", "jetbpm:retryPolicy: job options apply to external service tasks only; this task runs in process"},
		{"options on camunda:class", extTask(`camunda:class="a.B"`, `<jetbpm:status variable="s"/>`), "<jetbpm:status", "jetbpm:status: job options apply to external service tasks only"},
		{"options on expression", extTask(`camunda:expression="${svc.run()}"`, `<jetbpm:outputMapping><jetbpm:output path="body" variable="x"/></jetbpm:outputMapping>`), "<jetbpm:outputMapping", "job options apply to external service tasks only"},
		{"options on camunda:type other", extTask(`camunda:type="connector" camunda:class="x"`, `<jetbpm:errorMapper custom="m"/>`), "<bpmn:serviceTask", `camunda:type="connector" is not supported`},
		{"options on a task", around(`<bpmn:task id="t"><bpmn:extensionElements>
  <jetbpm:retryPolicy kind="none"/></bpmn:extensionElements></bpmn:task>`), "<jetbpm:retryPolicy", "jetbpm:retryPolicy: applies to external service tasks, send tasks and message throw events only"},
		{"options on a script task", around(`<bpmn:scriptTask id="t" scriptFormat="expr"><bpmn:extensionElements>
  <jetbpm:worker topic="a"/></bpmn:extensionElements><bpmn:script>1</bpmn:script></bpmn:scriptTask>`), "<jetbpm:worker", "jetbpm:worker: applies to external service tasks, send tasks and message throw events only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := importError(t, parseErr(t, c.src))
			line := lineOf(t, c.src, c.marker)
			if e.Element != "bpmn:"+elementOf(c.src) || e.ID != "t" || e.Line != line || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %v\nwant <bpmn:%s id=\"t\"> at line %d: ...%s", e, elementOf(c.src), line, c.msg)
			}
		})
	}
}

// elementOf is the kind of task "t" in src.
func elementOf(src string) string {
	for _, k := range []string{"serviceTask", "scriptTask", "task"} {
		if strings.Contains(src, `<bpmn:`+k+` id="t"`) {
			return k
		}
	}
	return ""
}

// jetbpm extension elements configure service tasks only: on a process or
// a sequence flow they are refused.
func TestJetbpmElementsElsewhere(t *testing.T) {
	src := doc(`<bpmn:process id="p"><bpmn:extensionElements>
  <jetbpm:retryPolicy kind="none"/></bpmn:extensionElements>
<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"><bpmn:extensionElements>
  <jetbpm:worker topic="a"/></bpmn:extensionElements></bpmn:sequenceFlow><bpmn:endEvent id="e"/></bpmn:process>`)
	err := parseErr(t, src)
	for _, want := range []string{
		`line 4: <bpmn:process id="p">: jetbpm:retryPolicy: not supported on a process; it configures an external service task`,
		`line 6: <bpmn:sequenceFlow id="f">: jetbpm:worker: not supported on a sequenceFlow`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
