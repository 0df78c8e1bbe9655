package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// corpus is the third-party BPMN corpus (testdata/conformance/bpmn/SOURCES.md).
const corpus = "../testdata/conformance/bpmn/"

// conformanceRun pins what one required conformance file does when started
// and its external tasks are worked by test workers (conformanceworkers_test.go)
// speaking the raw worker protocol.
type conformanceRun struct {
	file    string
	process string
	vars    map[string]any
	// waitsAt are nodes active before any job is worked (checked before the
	// workers start).
	waitsAt []string
	// outputs is the canned Complete output per topic; a topic without one
	// completes with an empty output. faults make a topic's worker fail or
	// throw instead.
	outputs map[string]map[string]any
	faults  map[string]fault
	// calls are the in-process operations expected to run, in order.
	calls []string
	want  instance.Status
	// jobs are the nodes whose jobs the workers finished, sorted.
	jobs []string
	// wantVars are final variables (compared as printed, since numbers
	// come back from JSON as float64).
	wantVars map[string]any
	check    func(t *testing.T, v *engine.InstanceView, served []servedJob)
}

// runnable are the 21 conformance files that must import (see the
// conformance table of engine/bpmnxml), each started once and run to its
// end. They all complete: none needs a timer longer than a second or a
// worker that fails for good.
var runnable = []conformanceRun{
	// Camunda 7 engine tests (external tasks).
	{
		// The sub-process input is a local of the sub-process; the task's
		// input mapping makes the job input exactly its locals.
		file:    "camunda7-engine-externaltask/ExternalTaskServiceTest.testFetchVariables.bpmn20.xml",
		process: "subProcessExternalTask",
		vars:    map[string]any{"processVar": 42},
		outputs: map[string]map[string]any{"externalTaskTopic": {"fetched": true}},
		want:    instance.Completed,
		jobs:    []string{"externalTask"},
		// Without output mappings the job output is set as Camunda's
		// setVariable does: new variables reach the process scope, while
		// the input-mapped subProcessVar and taskVar stay local and end
		// with their scopes.
		wantVars: map[string]any{"processVar": 42, "fetched": true},
		check: func(t *testing.T, v *engine.InstanceView, served []servedJob) {
			if in := served[0].Input; len(in) != 1 || fmt.Sprint(in["taskVar"]) != "45" {
				t.Errorf("job input %v, want only taskVar 45", in)
			}
			for _, local := range []string{"subProcessVar", "taskVar"} {
				if _, ok := v.Variables[local]; ok {
					t.Errorf("local %s leaked to the process: %v", local, v.Variables)
				}
			}
		},
	},
	{
		// camunda:taskPriority is recorded, not acted on: both jobs run.
		file:     "camunda7-engine-externaltask/externalTaskPriorityProcess.bpmn20.xml",
		process:  "twoExternalTaskWithPriorityProcess",
		waitsAt:  []string{"externalTaskWithPrio", "externalTaskWithoutPrio"},
		outputs:  map[string]map[string]any{"externalTaskTopic": {"done": "yes"}},
		want:     instance.Completed,
		jobs:     []string{"externalTaskWithPrio", "externalTaskWithoutPrio"},
		wantVars: map[string]any{"done": "yes"},
	},
	{
		// No isExecutable attribute: executable by default.
		file:     "camunda7-engine-externaltask/oneExternalTaskProcess.bpmn20.xml",
		process:  "oneExternalTaskProcess",
		vars:     map[string]any{"orderId": "o-1"},
		waitsAt:  []string{"externalTask"},
		outputs:  map[string]map[string]any{"externalTaskTopic": {"receipt": "r-1"}},
		want:     instance.Completed,
		jobs:     []string{"externalTask"},
		wantVars: map[string]any{"orderId": "o-1", "receipt": "r-1"},
		check: func(t *testing.T, _ *engine.InstanceView, served []servedJob) {
			if served[0].Input["orderId"] != "o-1" {
				t.Errorf("job input %v, want every visible variable", served[0].Input)
			}
		},
	},
	{
		file:    "camunda7-engine-externaltask/parallelExternalTaskProcess.bpmn20.xml",
		process: "parallelExternalTaskProcess",
		waitsAt: []string{"externalTask1", "externalTask2", "externalTask3"},
		outputs: map[string]map[string]any{
			"topic1": {"one": 1}, "topic2": {"two": 2}, "topic3": {"three": 3},
		},
		want:     instance.Completed,
		jobs:     []string{"externalTask1", "externalTask2", "externalTask3"},
		wantVars: map[string]any{"one": 1, "two": 2, "three": 3},
	},

	// Camunda 7 examples: in-process operations (camunda:expression).
	{
		file:     "camunda7-examples/camunda-testing-job-announcement-publication.bpmn",
		process:  "camunda-testing-job-announcement-publication",
		vars:     map[string]any{"twitter": true, "facebook": false},
		want:     instance.Completed,
		wantVars: map[string]any{"twitter": true, "facebook": false},
		calls: []string{
			"#{jobAnnouncementService.postToWebsite(jobAnnouncementId)}",
			"#{jobAnnouncementService.postToTwitter(jobAnnouncementId)}",
		},
	},

	// Camunda 7 external task client (JS).
	{
		// The JavaScript input script only sets literals: it becomes input
		// mappings, so the job input is those locals. A positive score
		// grants the loan.
		file:     "camunda7-external-task-client-js/test-process.bpmn",
		process:  "loan_process",
		waitsAt:  []string{"Task_1lvjtd4"},
		outputs:  map[string]map[string]any{"creditScoreChecker": {"score": 7}, "loanGranter": {"granted": true}},
		want:     instance.Completed,
		jobs:     []string{"ServiceTask_1kebqik", "Task_1lvjtd4"},
		wantVars: map[string]any{"score": 7, "granted": true},
		check: func(t *testing.T, _ *engine.InstanceView, served []servedJob) {
			in := served[1].Input // Task_1lvjtd4
			if fmt.Sprint(in["defaultScore"], in["missedPayments"], in["numberOfAccounts"]) != "0 false 4" {
				t.Errorf("credit score job input %v", in)
			}
		},
	},

	// lib-bpmn-engine (Zeebe dialect).
	{
		// Both flows carry the same condition and there is no default: the
		// first flow in document order whose condition holds is taken.
		file:     "lib-bpmn-engine/exclusive-gateway-multiple-tasks-no-default.bpmn",
		process:  "exclusive-gateway-multiple-tasks-no-default",
		vars:     map[string]any{"price": 0},
		want:     instance.Completed,
		jobs:     []string{"task-a"},
		wantVars: map[string]any{"price": 0},
	},
	{
		// price > 0 is false: the default flow runs task-b.
		file:     "lib-bpmn-engine/exclusive-gateway-with-condition-and-default.bpmn",
		process:  "exclusive-gateway-with-condition-and-default",
		vars:     map[string]any{"price": 0},
		outputs:  map[string]map[string]any{"task-b": {"took": "default"}},
		want:     instance.Completed,
		jobs:     []string{"task-b"},
		wantVars: map[string]any{"took": "default"},
	},
	{
		file:     "lib-bpmn-engine/fork-controlled-parallel-join.bpmn",
		process:  "fork-controlled-parallel-join",
		waitsAt:  []string{"id-a-1", "id-a-2"},
		outputs:  map[string]map[string]any{"task-b-1": {"joined": true}},
		want:     instance.Completed,
		jobs:     []string{"id-a-1", "id-a-2", "id-b-1"},
		wantVars: map[string]any{"joined": true},
	},
	{
		// Same process id as simple_task.bpmn: deployed as its next version.
		file:     "lib-bpmn-engine/parallel-gateway-flow.bpmn",
		process:  "Simple_Task_Process",
		waitsAt:  []string{"id-a-1"},
		outputs:  map[string]map[string]any{"b1": {"b1": "done"}, "b2": {"b2": "done"}},
		want:     instance.Completed,
		jobs:     []string{"id-a-1", "id-b-1", "id-b-2"},
		wantVars: map[string]any{"b1": "done", "b2": "done"},
	},
	{
		// The output mapping keeps variable_name and drops the rest of the
		// job output, as Zeebe does.
		file:     "lib-bpmn-engine/simple_task.bpmn",
		process:  "Simple_Task_Process",
		outputs:  map[string]map[string]any{"TestType": {"variable_name": "hello", "unmapped": 1}},
		want:     instance.Completed,
		jobs:     []string{"id"},
		wantVars: map[string]any{"variable_name": "hello"},
		check: func(t *testing.T, v *engine.InstanceView, _ []servedJob) {
			if _, ok := v.Variables["unmapped"]; ok {
				t.Errorf("unmapped job output stored: %v", v.Variables)
			}
		},
	},
	{
		// Every task is on topic "task": 5 jobs, in two sub-processes.
		file:    "lib-bpmn-engine/subprocess-fork-controlled-parallel-join.bpmn",
		process: "fork-controlled-exclusive-join",
		waitsAt: []string{"Sub-A", "Sub-A-Task-A1", "Sub-A-Task-A2", "Sub-B", "Sub-B-Task-A1"},
		want:    instance.Completed,
		jobs:    []string{"Sub-A-Task-A1", "Sub-A-Task-A2", "Sub-A-Task-B1", "Sub-B-Task-A1", "Task-C"},
	},

	// zeebe-node.
	{
		// The file's point: the worker throws BUSINESS_ERROR, the error
		// boundary on the sub-process catches it and the sad flow runs.
		file:     "zeebe-node/Client-ThrowError.bpmn",
		process:  "throw-bpmn-error",
		faults:   map[string]fault{"throw-bpmn-error-task": {bpmnError: "BUSINESS_ERROR"}},
		outputs:  map[string]map[string]any{"sad-flow": {"sad": true}},
		want:     instance.Completed,
		jobs:     []string{"Task_0bki2a1", "Task_1h8n9x5"},
		wantVars: map[string]any{"sad": true},
		check: func(t *testing.T, _ *engine.InstanceView, served []servedJob) {
			if served[0].Outcome != jobs.BpmnError || served[1].Outcome != jobs.Complete {
				t.Errorf("outcomes %s, %s", served[0].Outcome, served[1].Outcome)
			}
		},
	},
	{
		// The file's point: the job fails and is retried. retries="100"
		// reaches the worker as the shipped policy's maxAttempts; the worker
		// fails the first delivery asking for the 99 retries left, checks
		// in on the redelivery and completes. The header comes along.
		file:     "zeebe-node/Worker-Failure-Retries.bpmn",
		process:  "worker-failure-retries",
		faults:   map[string]fault{"service-task-worker-failure-retries": {technical: 1}},
		outputs:  map[string]map[string]any{"service-task-worker-failure-retries": {"said": "Hello World"}},
		want:     instance.Completed,
		jobs:     []string{"ServiceTask_0g6tf5f"},
		wantVars: map[string]any{"said": "Hello World"},
		check: func(t *testing.T, _ *engine.InstanceView, served []servedJob) {
			j := served[0]
			if j.Deliveries != 2 || j.Policy == nil || j.Policy.Retry.MaxAttempts != 100 || j.Headers["message"] != "Hello World" {
				t.Errorf("job %+v, policy %+v", j, j.Policy)
			}
		},
	},
	{
		// Upstream, its workers fail to raise an incident; here every worker
		// succeeds and path A is taken (incidents_test.go covers incidents).
		file:     "zeebe-node/Worker-RaiseIncident.bpmn",
		process:  "raise-incident",
		vars:     map[string]any{"conditionVariable": true},
		waitsAt:  []string{"ServiceTask_0cz2k8t"},
		outputs:  map[string]map[string]any{"pathA-raise-incident": {"path": "A"}},
		want:     instance.Completed,
		jobs:     []string{"ServiceTask_0cz2k8t", "ServiceTask_18goo5h"},
		wantVars: map[string]any{"path": "A"},
		check: func(t *testing.T, _ *engine.InstanceView, served []servedJob) {
			// retries="3" is the default policy (3 executions): the engine
			// keeps it; any other reading of it would ship.
			if p := served[0].Policy; p != nil {
				t.Errorf("retries=\"3\": policy %+v shipped, want the default kept", p)
			}
		},
	},
	{
		// conditionVariable is set by the first job: false takes path B.
		file:    "zeebe-node/conditional-pathway.bpmn",
		process: "condition-test",
		outputs: map[string]map[string]any{
			"wait": {"conditionVariable": false}, "pathB": {"path": "B"},
		},
		want:     instance.Completed,
		jobs:     []string{"ServiceTask_0cz2k8t", "ServiceTask_15isvh5"},
		wantVars: map[string]any{"conditionVariable": false, "path": "B"},
	},
	{
		file:     "zeebe-node/hello-world.bpmn",
		process:  "hello-world",
		waitsAt:  []string{"ServiceTask_0g6tf5f"},
		outputs:  map[string]map[string]any{"console-log": {"logged": "Hello World"}},
		want:     instance.Completed,
		jobs:     []string{"ServiceTask_0g6tf5f"},
		wantVars: map[string]any{"logged": "Hello World"},
		check: func(t *testing.T, _ *engine.InstanceView, served []servedJob) {
			if served[0].Headers["message"] != "Hello World" {
				t.Errorf("headers %v", served[0].Headers)
			}
		},
	},

	// zeebe-process-test.
	{
		// The start event's output sets loopAmount = 0; each job run adds
		// one through the task's output mapping; the loop ends when
		// loopAmount = totalLoops.
		file:     "zeebe-process-test/looping-servicetask.bpmn",
		process:  "looping-servicetask",
		vars:     map[string]any{"totalLoops": 3},
		want:     instance.Completed,
		jobs:     []string{"servicetask", "servicetask", "servicetask"},
		wantVars: map[string]any{"loopAmount": 3, "totalLoops": 3},
	},
	{
		// Three tasks on topic "test"; only servicetask1 maps an output.
		file:     "zeebe-process-test/multiple-tasks.bpmn",
		process:  "multiple-tasks",
		waitsAt:  []string{"servicetask1", "servicetask2", "servicetask3"},
		want:     instance.Completed,
		jobs:     []string{"servicetask1", "servicetask2", "servicetask3"},
		wantVars: map[string]any{"loopAmount": 1},
	},
	{
		file:    "zeebe-process-test/start-end.bpmn",
		process: "start-end",
		want:    instance.Completed,
		check: func(t *testing.T, v *engine.InstanceView, _ []servedJob) {
			if len(v.ActiveNodes) != 0 || len(v.Variables) != 0 || v.EndedAt == nil {
				t.Errorf("view %+v", v)
			}
		},
	},
	{
		// A parallel split waits 30 days on one branch and runs a job then
		// waits 1 s on the other, which ends in a terminate end event: the
		// fast branch terminates the slow one's 30-day timer, and the
		// instance completes after about a second. Both waits are pinned
		// before the job is worked.
		file:    "zeebe-process-test/test_timer_events.bpmn",
		process: "Process_Timer_Test_01",
		waitsAt: []string{"Activity_InvokeDummyWorker", "TimerEvent_Wait30d"},
		want:    instance.Completed,
		jobs:    []string{"Activity_InvokeDummyWorker"},
		check: func(t *testing.T, v *engine.InstanceView, _ []servedJob) {
			if v.EndedAt == nil || v.EndedAt.Sub(v.StartedAt) < time.Second || v.EndedAt.Sub(v.StartedAt) > time.Minute || len(v.ActiveNodes) != 0 {
				t.Errorf("view %+v: want an end after the 1 s timer, the 30-day timer terminated", v)
			}
		},
	},
}

func TestConformanceFilesRun(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	eng := openEngine(t, env, ops)
	ctx := context.Background()
	if len(runnable) != 21 {
		t.Errorf("%d runnable files, want the 21 required", len(runnable))
	}
	for _, tc := range runnable {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			deps, err := eng.DeployFile(ctx, corpus+tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(deps) != 1 || deps[0].ProcessID != tc.process {
				t.Fatalf("deployed %+v, want process %s", deps, tc.process)
			}
			p, err := eng.Process(ctx, tc.process, deps[0].Version)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var calls []string
			for _, n := range p.Nodes {
				if n.Service != nil && n.Service.Operation != "" {
					op := n.Service.Operation
					ops.Register(op, func(context.Context, map[string]any) (map[string]any, error) {
						mu.Lock()
						defer mu.Unlock()
						calls = append(calls, op)
						return nil, nil
					})
				}
			}
			id, err := eng.Start(ctx, tc.process, tc.vars, engine.Version(deps[0].Version))
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.waitsAt) > 0 {
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				v, err := eng.WaitUntil(wctx, id, func(v *engine.InstanceView) bool {
					return slices.Equal(sorted(v.ActiveNodes), tc.waitsAt)
				})
				cancel()
				if err != nil {
					t.Fatalf("never waited at %v: %+v: %v", tc.waitsAt, v, err)
				}
			}
			workers := serveJobs(t, env, id, processTopics(p), tc.outputs, tc.faults, 30*time.Second)
			v := waitDone(t, eng, id)
			served := workers.stop()
			if v.Status != tc.want {
				t.Fatalf("status %s, want %s: %+v", v.Status, tc.want, v.Failure)
			}
			var nodes []string
			for _, j := range served {
				nodes = append(nodes, j.Node)
			}
			if !slices.Equal(nodes, tc.jobs) {
				t.Fatalf("jobs worked for %v, want %v", nodes, tc.jobs)
			}
			mu.Lock()
			ran := slices.Clone(calls)
			mu.Unlock()
			if !slices.Equal(ran, tc.calls) {
				t.Fatalf("operations ran %q, want %q", ran, tc.calls)
			}
			for name, want := range tc.wantVars {
				if got, ok := v.Variables[name]; !ok || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("variable %s = %v (set %t), want %v; all: %v", name, got, ok, want, v.Variables)
				}
			}
			if tc.check != nil {
				tc.check(t, v, served)
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// The jetbpm XML job options reach the engine: a fault classified into a
// status by an XML error mapper, an XML output mapping applied by the
// engine, the lock duration and the trust of jetbpm:worker.
func TestXMLJobOptionsRun(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	const src = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" id="d">
  <bpmn:process id="xml-options" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="lookup"/>
    <bpmn:serviceTask id="lookup">
      <bpmn:extensionElements>
        <jetbpm:worker topic="xml-lookup" trust="engineAuthoritative"/>
        <jetbpm:retryPolicy kind="none"/>
        <jetbpm:errorMapper>
          <jetbpm:rule code="404" when="body.type == 'NOT_FOUND'" status="NOT_FOUND"/>
        </jetbpm:errorMapper>
        <jetbpm:status variable="lookupResult"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="lookup" targetRef="create"/>
    <bpmn:serviceTask id="create">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="xml-create"/>
        <jetbpm:worker trust="engineAuthoritative" lockDuration="PT45S"/>
        <jetbpm:outputMapping>
          <jetbpm:output path="body.data.id" variable="orderId" required="true"/>
        </jetbpm:outputMapping>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f3" sourceRef="create" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`
	if _, err := eng.DeployXML(ctx, strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "xml-options", nil)
	if err != nil {
		t.Fatal(err)
	}
	lookup := newRawWorker(t, env, "xml-lookup")
	m, job := lookup.fetch()
	if job.Policy != nil {
		t.Fatalf("engineAuthoritative job shipped a policy: %+v", job.Policy)
	}
	if v := lookup.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "404", Body: map[string]any{"type": "NOT_FOUND"}}); !v.Accepted {
		t.Fatalf("fail refused: %+v", v)
	}
	create := newRawWorker(t, env, "xml-create")
	m, job = create.fetch()
	if job.LockDurationMs != 45000 {
		t.Errorf("lock %d ms, want 45000", job.LockDurationMs)
	}
	out := map[string]any{"data": map[string]any{"id": "o-9"}, "noise": 1}
	if v := create.report(m, job, jobs.Report{Kind: jobs.Complete, Output: out}); !v.Accepted {
		t.Fatalf("complete refused: %+v", v)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["lookupResult"] != "NOT_FOUND" || v.Variables["orderId"] != "o-9" {
		t.Fatalf("view %+v", v)
	}
	if _, ok := v.Variables["noise"]; ok {
		t.Errorf("unmapped output stored: %v", v.Variables)
	}
}
