package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestConformanceUserTasksRun runs the executable corpus files with user
// tasks (see the conformance table of engine/bpmnxml) to their end: the
// test completes their tasks through the task API, conformance workers
// work their external tasks, and messages are correlated where a file
// waits for one.
func TestConformanceUserTasksRun(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)

	// deployFiles deploys corpus files; the last one's process is run.
	deployFiles := func(t *testing.T, files ...string) {
		t.Helper()
		for _, file := range files {
			if _, err := eng.DeployFile(bounded(t), corpus+file); err != nil {
				t.Fatal(err)
			}
		}
	}
	// complete completes the task of instance id at node, with vars.
	complete := func(t *testing.T, id, node string, vars map[string]any) {
		t.Helper()
		task := taskAt(t, eng, id, node)
		if _, err := eng.CompleteTask(bounded(t), task, "conformance", vars); err != nil {
			t.Fatalf("complete %s: %v", task, err)
		}
	}
	finished := func(t *testing.T, id string) *engine.InstanceView {
		t.Helper()
		v := waitDone(t, eng, id)
		if v.Status != instance.Completed {
			t.Fatalf("instance %s: %s, want completed: %+v", id, v.Status, v.Failure)
		}
		return v
	}

	t.Run("subProcess.bpmn", func(t *testing.T) {
		deployFiles(t, "camunda7-examples/subProcess.bpmn")
		startTask(t, eng, "subProcess", "c7-sub", nil)
		task := taskAt(t, eng, "c7-sub", "UserTask_0zlyiaz")
		rec, err := eng.Task(bounded(t), task)
		if err != nil || rec.Name != "task in default subprocess" || rec.Assignee != "" || len(rec.CandidateGroups) != 0 {
			t.Fatalf("task %+v, %v", rec, err)
		}
		complete(t, "c7-sub", "UserTask_0zlyiaz", map[string]any{"done": true})
		if v := finished(t, "c7-sub"); v.Variables["done"] != true {
			t.Fatalf("variables %v", v.Variables)
		}
	})

	t.Run("mainProcess.bpmn", func(t *testing.T) {
		// Its call activity runs subProcess.bpmn, whose task the test completes.
		deployFiles(t, "camunda7-examples/subProcess.bpmn", "camunda7-examples/mainProcess.bpmn")
		startTask(t, eng, "mainProcess", "c7-main", nil)
		v := waitFor(t, eng, "c7-main", "a called instance", func(v *engine.InstanceView) bool { return len(v.CalledInstances) == 1 })
		child := v.CalledInstances[0]
		complete(t, child, "UserTask_0zlyiaz", nil)
		finished(t, child)
		finished(t, "c7-main")
	})

	t.Run("service-task-input-output.bpmn", func(t *testing.T) {
		// Its job's output mappings build a FEEL context; the user task
		// after it reads a field of it.
		deployFiles(t, "lib-bpmn-engine/service-task-input-output.bpmn")
		startTask(t, eng, "service-task-input-output", "lib-io", nil)
		workers := serveJobs(t, env, "lib-io", []string{"input-task-1"}, nil, nil, 30*time.Second)
		task := taskAt(t, eng, "lib-io", "user-task-2")
		workers.stop()
		rec, err := eng.Task(bounded(t), task)
		if err != nil || rec.Variables["orderName"] != "order1" {
			t.Fatalf("task %+v, %v: want orderName order1", rec, err)
		}
		complete(t, "lib-io", "user-task-2", nil)
		v := finished(t, "lib-io")
		order, _ := v.Variables["order"].(map[string]any)
		if order["name"] != "order1" || order["id"] != "1234" || fmt.Sprint(v.Variables["orderId"]) != "1234" || v.Variables["dstcity"] != "beijing" {
			t.Fatalf("variables %v", v.Variables)
		}
	})

	t.Run("twoExternalTaskProcess.bpmn20.xml", func(t *testing.T) {
		deployFiles(t, "camunda7-engine-externaltask/twoExternalTaskProcess.bpmn20.xml")
		// The job completes: the user task after it.
		startTask(t, eng, "twoExternalTaskProcess", "c7-two-ok", nil)
		workers := serveJobs(t, env, "c7-two-ok", []string{"externalTaskTopic"}, map[string]map[string]any{"externalTaskTopic": {"fetched": 1}}, nil, 30*time.Second)
		complete(t, "c7-two-ok", "afterExternalTask", nil)
		finished(t, "c7-two-ok")
		if served := workers.stop(); len(served) != 1 || served[0].Outcome != jobs.Complete {
			t.Fatalf("jobs %+v", served)
		}
		// The job throws ERROR-OCCURED: the boundary's user task.
		startTask(t, eng, "twoExternalTaskProcess", "c7-two-err", nil)
		workers = serveJobs(t, env, "c7-two-err", []string{"externalTaskTopic"}, nil, map[string]fault{"externalTaskTopic": {bpmnError: "ERROR-OCCURED"}}, 30*time.Second)
		complete(t, "c7-two-err", "afterBpmnError", nil)
		finished(t, "c7-two-err")
		if served := workers.stop(); len(served) != 1 || served[0].Outcome != jobs.BpmnError {
			t.Fatalf("jobs %+v", served)
		}
	})

	t.Run("ExternalTaskServiceTest.testCancelExternalTaskWithBoundaryEvent.bpmn20.xml", func(t *testing.T) {
		// The message boundary cancels the external task; its user task follows.
		deployFiles(t, "camunda7-engine-externaltask/ExternalTaskServiceTest.testCancelExternalTaskWithBoundaryEvent.bpmn20.xml")
		startTask(t, eng, "boundaryExternalTaskProcess", "c7-cancel", nil)
		waitFor(t, eng, "c7-cancel", "the external task", func(v *engine.InstanceView) bool { return slices.Equal(v.ActiveNodes, []string{"externalTask"}) })
		if _, err := eng.CorrelateMessage(bounded(t), engine.Message{Name: "Message", Instance: "c7-cancel"}); err != nil {
			t.Fatal(err)
		}
		complete(t, "c7-cancel", "afterBoundaryTask", nil)
		if v := finished(t, "c7-cancel"); len(v.ActiveNodes) != 0 {
			t.Fatalf("view %+v", v)
		}
	})

	t.Run("invoicePayment.bpmn", func(t *testing.T) {
		// Pay Invoice has an error boundary (invoice-error: Archive
		// Invoice) and an escalation boundary (invoice-escalate: Inform
		// Supervisor); the test takes each way out of it, as Camunda 7's
		// complete, handleBpmnError and handleEscalation would.
		deployFiles(t, "camunda7-examples/invoicePayment.bpmn")
		const pay = "Task_16y91ka"
		startTask(t, eng, "embeddedFormsBpmnEvents", "c7-inv-paid", nil)
		complete(t, "c7-inv-paid", pay, map[string]any{"paid": true})
		finished(t, "c7-inv-paid")

		startTask(t, eng, "embeddedFormsBpmnEvents", "c7-inv-err", nil)
		if _, err := eng.TaskError(bounded(t), taskAt(t, eng, "c7-inv-err", pay), "ann", "invoice-error", "no amount", nil); err != nil {
			t.Fatal(err)
		}
		complete(t, "c7-inv-err", "Task_1a2twqz", nil)
		finished(t, "c7-inv-err")

		startTask(t, eng, "embeddedFormsBpmnEvents", "c7-inv-esc", nil)
		// An escalation nothing catches is refused and changes nothing.
		task := taskAt(t, eng, "c7-inv-esc", pay)
		if _, err := eng.EscalateTask(bounded(t), task, "ann", "other", nil); !errors.Is(err, engine.ErrInvalid) {
			t.Fatalf("uncaught escalate: %v, want ErrInvalid", err)
		}
		rec, err := eng.EscalateTask(bounded(t), task, "ann", "invoice-escalate", map[string]any{"suspicious": true})
		if err != nil || rec.State != instance.TaskCanceled {
			t.Fatalf("escalate = %+v, %v", rec, err)
		}
		complete(t, "c7-inv-esc", "Task_0q869n2", nil)
		if v := finished(t, "c7-inv-esc"); v.Variables["suspicious"] != true {
			t.Fatalf("variables %v", v.Variables)
		}
		testwait.Until(t, 10*time.Second, "the escalated fact to be stored", func() error {
			for _, f := range storedTaskFacts(t, env.JS, "embeddedFormsBpmnEvents") {
				if f.Kind == instance.TaskFactEscalated && f.Task == task && f.EscalationCode == "invoice-escalate" && f.User == "ann" {
					return nil
				}
			}
			return fmt.Errorf("not stored yet")
		})
	})

	t.Run("pr-created.bpmn", func(t *testing.T) {
		// A message starts it; a call activity runs automated-tests.bpmn
		// (a multi-instance sub-process of jobs) beside the review: the
		// review task, then a review message for the PR's key, then the
		// merge task and the deploy job.
		deployFiles(t, "zeebe-process-test/automated-tests.bpmn", "zeebe-process-test/pr-created.bpmn")
		id, err := eng.CorrelateMessage(bounded(t), engine.Message{Name: "prCreated", Vars: map[string]any{"prId": "pr-17"}})
		if err != nil {
			t.Fatal(err)
		}
		v := waitFor(t, eng, id, "the call to the tests", func(v *engine.InstanceView) bool { return len(v.CalledInstances) == 1 })
		tests := serveJobs(t, env, v.CalledInstances[0], []string{"runTests"}, nil, nil, 30*time.Second)
		deploys := serveJobs(t, env, id, []string{"deploySnapshot"}, map[string]map[string]any{"deploySnapshot": {"deployed": true}}, nil, 30*time.Second)
		complete(t, id, "requestReview", nil)
		waitFor(t, eng, id, "the wait for the review", func(v *engine.InstanceView) bool { return slices.Contains(v.ActiveNodes, "Gateway_1wymgxc") })
		// The catch's subscription reaches the message partition after the
		// checkpoint: correlate once it is stored.
		subscribed(t, env, "reviewReceived", "pr-17", 1)
		if _, err := eng.CorrelateMessage(bounded(t), engine.Message{Name: "reviewReceived", Key: "pr-17", Vars: map[string]any{"reviewResult": "approved"}}); err != nil {
			t.Fatal(err)
		}
		complete(t, id, "mergeCode", nil)
		v = finished(t, id)
		if v.Variables["reviewResult"] != "approved" || v.Variables["deployed"] != true {
			t.Fatalf("variables %v", v.Variables)
		}
		ran := tests.stop()
		if len(ran) != 3 {
			t.Errorf("test jobs %+v, want one per operating system", ran)
		}
		if d := deploys.stop(); len(d) != 1 || d[0].Node != "deploySnapshot" {
			t.Errorf("deploy jobs %+v", d)
		}
		all, err := eng.Tasks(bounded(t), engine.TaskFilter{Instance: id, State: engine.TasksAll})
		if err != nil {
			t.Fatal(err)
		}
		var done []string
		for _, rec := range all {
			done = append(done, fmt.Sprintf("%s %s", rec.Node, rec.State))
		}
		slices.Sort(done)
		if !slices.Equal(done, []string{"mergeCode completed", "requestReview completed"}) {
			t.Errorf("tasks %v", done)
		}
	})
}
