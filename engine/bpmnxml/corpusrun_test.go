package bpmnxml

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/jobs"
)

// The corpus files that inclusive gateways and camunda:errorEventDefinition
// made importable run to their end in the step (no engine): jobs are
// completed or failed as a worker would, user tasks completed.

func startCorpus(t *testing.T, file string, vars map[string]any) (*instance.State, instance.Env) {
	t.Helper()
	ps, err := ParseFile(filepath.Join(corpus, file))
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	p.Version = 1
	env := instance.Env{Process: p, Now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	s, err := instance.Start("i1", env, vars)
	if err != nil {
		t.Fatal(err)
	}
	return s, env
}

// waitsOf returns the nodes s waits at, by wait kind.
func waitsOf(s *instance.State, kind instance.WaitKind) (nodes []string, waits []*instance.Wait) {
	for _, w := range s.Waits {
		if w.Kind == kind {
			nodes, waits = append(nodes, w.Node), append(waits, w)
		}
	}
	return nodes, waits
}

func step(t *testing.T, s *instance.State, env instance.Env, ev instance.Event) {
	t.Helper()
	if n, err := instance.Apply(s, env, ev); err != nil || n != 1 {
		t.Fatalf("Apply(%s) = %d, %v", ev.ID, n, err)
	}
}

func done(w *instance.Wait) instance.Event {
	return instance.Event{ID: "done:" + w.ID, Kind: instance.JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Done}}
}

func TestCorpusInclusiveGatewayRuns(t *testing.T) {
	for _, tt := range []struct {
		price float64
		jobs  []string
	}{
		{10, []string{"task-a", "task-b"}}, // the flow named "default" is not one: it is always taken
		{0, []string{"task-b"}},
	} {
		s, env := startCorpus(t, "lib-bpmn-engine/inclusive-gateway-with-condition-and-default.bpmn", map[string]any{"price": tt.price})
		nodes, waits := waitsOf(s, instance.JobWait)
		if !slices.Equal(nodes, tt.jobs) {
			t.Fatalf("price %v: jobs at %v, want %v", tt.price, nodes, tt.jobs)
		}
		for _, w := range waits {
			step(t, s, env, done(w))
		}
		if s.Status != instance.Completed {
			t.Errorf("price %v: status %s", tt.price, s.Status)
		}
	}
}

func TestCorpusCamundaErrorEventDefinitionRuns(t *testing.T) {
	const file = "camunda7-engine-externaltask/ExternalTaskServiceTest.externalTaskWithNestedErrorEventDefinition.bpmn20.xml"
	s, env := startCorpus(t, file, nil)
	_, waits := waitsOf(s, instance.JobWait)
	// The worker completes the task: as in Camunda 7, ${true} makes that
	// the error, which the boundary catches on the way to the user task.
	step(t, s, env, done(waits[0]))
	nodes, tasks := waitsOf(s, instance.UserTaskWait)
	if !slices.Equal(nodes, []string{"Activity_01dmeca"}) {
		t.Fatalf("user tasks at %v (active %v)", nodes, s.ActiveNodes())
	}
	step(t, s, env, instance.Event{ID: "c1", Kind: instance.UserTaskCommand,
		Task: &instance.TaskCommand{Task: tasks[0].Task.ID, Op: instance.TaskComplete}})
	if s.Status != instance.Completed {
		t.Errorf("status %s", s.Status)
	}

	// A failure is the error too: the policy the job carries classifies
	// every fault as it.
	s, _ = startCorpus(t, file, nil)
	_, waits = waitsOf(s, instance.JobWait)
	m, err := jobs.CompileRules(waits[0].Job.Policy.Rules)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Classify(jobs.Fault{Code: "500", Body: "boom"}); c.Kind != jobs.BusinessError || c.ErrorCode != "errorCode" {
		t.Errorf("a fault is classified %+v, want the BPMN error errorCode", c)
	}
}
