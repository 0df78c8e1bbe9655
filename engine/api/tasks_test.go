package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// reviewXML is a Camunda 7 user task for group accounting, its output
// mapping taking "approved"; a REJECTED error ends it on another path.
const reviewXML = header + `<bpmn:process id="review" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
  <bpmn:userTask id="approve" name="Approve" camunda:candidateGroups="accounting" camunda:priority="${prio}" camunda:formKey="approve-form">
    <bpmn:extensionElements><camunda:inputOutput>
      <camunda:inputParameter name="amount">${amount}</camunda:inputParameter>
      <camunda:outputParameter name="decision">${approved}</camunda:outputParameter>
    </camunda:inputOutput></bpmn:extensionElements>
  </bpmn:userTask>
  <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  <bpmn:endEvent id="e"/>
  <bpmn:boundaryEvent id="rejected" attachedToRef="approve"><bpmn:errorEventDefinition errorRef="err"/></bpmn:boundaryEvent>
  <bpmn:sequenceFlow id="f3" sourceRef="rejected" targetRef="e2"/>
  <bpmn:endEvent id="e2"/>
</bpmn:process>
<bpmn:error id="err" errorCode="REJECTED"/>
</bpmn:definitions>
`

// taskOf starts review as id and returns its task's id once listed.
func (f *fixture) taskOf(t *testing.T, id string, prio int) string {
	t.Helper()
	f.start(t, api.StartRequest{ProcessID: "review", ID: id, Vars: json.RawMessage(fmt.Sprintf(`{"amount": 12, "prio": %d}`, prio))})
	return f.onlyTask(t, id)
}

// onlyTask returns the id of instance id's one open task once listed.
func (f *fixture) onlyTask(t *testing.T, id string) string {
	t.Helper()
	var task string
	testwait.Until(t, 10*time.Second, "the task of "+id+" to be listed", func() error {
		list, err := f.client.Tasks(ctxT(t), api.TaskListRequest{Instance: id})
		if err == nil && len(list) != 1 {
			err = fmt.Errorf("listed %d", len(list))
		}
		if err == nil {
			task = list[0].ID
		}
		return err
	})
	return task
}

// listed waits, bounded, until the task list req returns exactly want: a
// change shows in the list once the node's index has heard of it.
func listed(t *testing.T, f *fixture, what string, req api.TaskListRequest, want ...string) {
	t.Helper()
	testwait.Until(t, 10*time.Second, what+" to list "+strings.Join(want, ", "), func() error {
		list, err := f.client.Tasks(ctxT(t), req)
		if err == nil && !slices.Equal(apiTaskIDs(list), want) {
			err = fmt.Errorf("listed %v", apiTaskIDs(list))
		}
		return err
	})
}

func apiTaskIDs(list []*instance.Task) []string {
	out := []string{}
	for _, rec := range list {
		out = append(out, rec.ID)
	}
	return out
}

// code returns the wire code of err ("" if it is not an API error).
func code(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

func TestTaskOperations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "review.bpmn", XML: reviewXML})
	t1, t2, t3 := f.taskOf(t, "r-1", 30), f.taskOf(t, "r-2", 60), f.taskOf(t, "r-3", 10)

	list, err := f.client.Tasks(ctx, api.TaskListRequest{CandidateGroup: "accounting"})
	if err != nil || !slices.Equal(apiTaskIDs(list), []string{t2, t1, t3}) {
		t.Fatalf("list = %v, %v", apiTaskIDs(list), err)
	}
	if rec := list[1]; rec.Instance != "r-1" || rec.ProcessID != "review" || rec.Node != "approve" || rec.Name != "Approve" ||
		rec.Priority != 30 || rec.FormKey != "approve-form" || rec.State != instance.TaskCreated || fmt.Sprint(rec.Variables) != "map[amount:12]" {
		t.Errorf("record %+v", rec)
	}
	if page, err := f.client.Tasks(ctx, api.TaskListRequest{Offset: 1, Limit: 1}); err != nil || !slices.Equal(apiTaskIDs(page), []string{t1}) {
		t.Errorf("page = %v, %v", apiTaskIDs(page), err)
	}

	rec, err := f.client.ClaimTask(ctx, t1, "alice")
	if err != nil || rec.Assignee != "alice" || rec.State != instance.TaskAssigned {
		t.Fatalf("claim = %+v, %v", rec, err)
	}
	_, err = f.client.ClaimTask(ctx, t1, "bob")
	if !errors.Is(err, engine.ErrConflict) || code(err) != "conflict" || err.Error() != "task "+t1+" is assigned to alice" {
		t.Fatalf("claim by bob: %#v, want code conflict", err)
	}
	// The index lags the record by the watch's delivery: wait for the
	// claim to reach it.
	listed(t, f, "alice's tasks", api.TaskListRequest{Assignee: "alice"}, t1)
	if rec, err = f.client.UnclaimTask(ctx, t1, "alice"); err != nil || rec.Assignee != "" || rec.State != instance.TaskCreated {
		t.Fatalf("unclaim = %+v, %v", rec, err)
	}
	if rec, err = f.client.AssignTask(ctx, t1, "carol"); err != nil || rec.Assignee != "carol" {
		t.Fatalf("assign = %+v, %v", rec, err)
	}
	due, prio := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC), 90
	if rec, err = f.client.UpdateTask(ctx, t1, engine.TaskUpdate{DueDate: &due, Priority: &prio}); err != nil || !rec.DueDate.Equal(due) || rec.Priority != 90 {
		t.Fatalf("update = %+v, %v", rec, err)
	}
	listed(t, f, "the tasks due before 2026-12-05", api.TaskListRequest{DueBefore: "2026-12-05"}, t1)
	var zero time.Time
	if rec, err = f.client.UpdateTask(ctx, t1, engine.TaskUpdate{DueDate: &zero}); err != nil || !rec.DueDate.IsZero() || rec.Priority != 90 {
		t.Fatalf("clear the due date = %+v, %v", rec, err)
	}
	if got, err := f.client.Task(ctx, t1); err != nil || got.Revision != rec.Revision || got.Assignee != "carol" {
		t.Fatalf("get = %+v, %v", got, err)
	}

	// complete: the output mapping takes approved.
	if rec, err = f.client.CompleteTask(ctx, t1, "carol", json.RawMessage(`{"approved": true}`)); err != nil || rec.State != instance.TaskCompleted || rec.CompletedBy != "carol" {
		t.Fatalf("complete = %+v, %v", rec, err)
	}
	if v := f.waitDone(t, "r-1"); v.Status != instance.Completed || v.Variables["decision"] != true {
		t.Fatalf("r-1 = %+v", v)
	}
	_, err = f.client.CompleteTask(ctx, t1, "dave", nil)
	if code(err) != "finished" || err.Error() != "task "+t1+" is completed by carol" {
		t.Fatalf("complete again: %#v", err)
	}

	// error: the boundary takes it.
	if rec, err = f.client.TaskError(ctx, t2, "erin", "REJECTED", "over budget", json.RawMessage(`{"why": "budget"}`)); err != nil ||
		rec.Error == nil || rec.Error.Code != "REJECTED" || rec.Error.Message != "over budget" {
		t.Fatalf("error = %+v, %v", rec, err)
	}
	if v := f.waitDone(t, "r-2"); v.Status != instance.Completed || slices.Contains(v.ActiveNodes, "approve") || v.Variables["why"] != "budget" {
		t.Fatalf("r-2 = %+v", v)
	}
	all, err := f.client.Tasks(ctx, api.TaskListRequest{State: "all"})
	if err != nil || len(all) != 3 {
		t.Fatalf("all = %v, %v", apiTaskIDs(all), err)
	}

	// Bad requests change nothing.
	for name, call := range map[string]func() error{
		"claim without user": func() error { _, err := f.client.ClaimTask(ctx, t3, ""); return err },
		"update of nothing":  func() error { _, err := f.client.UpdateTask(ctx, t3, engine.TaskUpdate{}); return err },
		"error without code": func() error { _, err := f.client.TaskError(ctx, t3, "", "", "", nil); return err },
		"vars not an object": func() error { _, err := f.client.CompleteTask(ctx, t3, "", json.RawMessage(`[1]`)); return err },
		"limit 5000":         func() error { _, err := f.client.Tasks(ctx, api.TaskListRequest{Limit: 5000}); return err },
		"state bogus":        func() error { _, err := f.client.Tasks(ctx, api.TaskListRequest{State: "bogus"}); return err },
		"dueBefore tomorrow": func() error { _, err := f.client.Tasks(ctx, api.TaskListRequest{DueBefore: "tomorrow"}); return err },
	} {
		if err := call(); code(err) != "invalid" {
			t.Errorf("%s: %v, want code invalid", name, err)
		}
	}
	if rec, err := f.client.Task(ctx, t3); err != nil || rec.Revision != 1 {
		t.Errorf("t3 after bad requests = %+v, %v", rec, err)
	}
	for _, id := range []string{"r-3.t99", "nope", "r-3", ""} {
		if _, err := f.client.Task(ctx, id); code(err) != "not_found" {
			t.Errorf("get %q: %v, want not_found", id, err)
		}
		if _, err := f.client.ClaimTask(ctx, id, "alice"); code(err) != "not_found" {
			t.Errorf("claim %q: %v, want not_found", id, err)
		}
	}

	// escalate: nothing in review catches an escalation, so the instance
	// refuses it (Camunda 7's handleEscalation throws) and sets nothing.
	_, err = f.client.EscalateTask(ctx, t3, "fay", "late", json.RawMessage(`{"x": 1}`))
	if code(err) != "invalid" || !strings.Contains(err.Error(), `escalation "late" from task `+t3+" is not caught") {
		t.Fatalf("escalate: %#v, want code invalid", err)
	}
	if rec, err := f.client.Task(ctx, t3); err != nil || rec.State.Finished() {
		t.Fatalf("t3 after a refused escalate = %+v, %v", rec, err)
	}
}

func TestTaskRawRequests(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ops := []string{api.OpTaskList, api.OpTaskGet, api.OpTaskClaim, api.OpTaskUnclaim, api.OpTaskAssign, api.OpTaskUpdate, api.OpTaskComplete, api.OpTaskError, api.OpTaskEscalate}
	for _, op := range ops {
		for _, body := range []string{"{not json", "", "[]", `{"id": 5, "limit": "x", "priority": "high"}`, "\x00\xff"} {
			if _, e := rawReply(t, f.nc, op, []byte(body)); e == nil || e.Code != "invalid" {
				t.Errorf("%s with body %q: error %+v, want code invalid", op, body, e)
			}
		}
	}
	// A field the operation does not take is refused, not ignored.
	for op, body := range map[string]string{
		api.OpTaskClaim:    `{"id": "x.t1", "user": "a", "vars": {"v": 1}}`,
		api.OpTaskGet:      `{"id": "x.t1", "user": "a"}`,
		api.OpTaskComplete: `{"id": "x.t1", "priority": 5}`,
		api.OpTaskAssign:   `{"id": "x.t1", "code": "E"}`,
		api.OpTaskUpdate:   `{"id": "x.t1", "dueDate": "soon"}`,
		api.OpTaskEscalate: `{"id": "x.t1", "code": "E", "message": "m"}`,
	} {
		if _, e := rawReply(t, f.nc, op, []byte(body)); e == nil || e.Code != "invalid" {
			t.Errorf("%s %s: error %+v, want code invalid", op, body, e)
		}
	}
	if res, e := rawReply(t, f.nc, api.OpTaskList, []byte(`{}`)); e != nil || string(res) != `{"tasks":[]}` {
		t.Errorf("empty list = %s, %+v; want an empty array, not null", res, e)
	}
}

// A page that does not fit in a reply is refused with too_large, naming
// the limit to lower, instead of leaving the client to time out.
func TestTaskListTooLargeForAReply(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	p, err := model.NewBuilder("blobs").StartEvent("s").UserTask("u", model.Input("blob", "blob")).EndEvent("e").Sequence("s", "u", "e").Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	blob := strings.Repeat("x", 200<<10)
	for range 6 {
		if _, err := f.eng.Start(ctx, "blobs", map[string]any{"blob": blob}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, 10*time.Second, "six tasks", func() error {
		list, err := f.eng.Tasks(ctx, engine.TaskFilter{})
		if err == nil && len(list) != 6 {
			err = fmt.Errorf("%d", len(list))
		}
		return err
	})
	_, err = f.client.Tasks(ctx, api.TaskListRequest{})
	if code(err) != "too_large" || !strings.Contains(err.Error(), "max payload") {
		t.Fatalf("a page of 1.2 MB: %v, want too_large", err)
	}
	if page, err := f.client.Tasks(ctx, api.TaskListRequest{Limit: 2}); err != nil || len(page) != 2 {
		t.Fatalf("a page of 2: %d, %v", len(page), err)
	}
}
