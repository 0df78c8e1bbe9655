package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
)

// approvalBPMN asks accounting to approve an order, with a generated
// form; a REJECTED error ends it on another path.
const approvalBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:error id="rejected" errorCode="REJECTED"/>
  <bpmn:process id="approve-order" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="approve" name="Approve order" camunda:candidateGroups="accounting" camunda:priority="${amount > 100 ? 80 : 40}">
      <bpmn:extensionElements>
        <camunda:inputOutput><camunda:inputParameter name="amount">${amount}</camunda:inputParameter></camunda:inputOutput>
        <camunda:formData>
          <camunda:formField id="approved" label="Approved" type="boolean" defaultValue="false"/>
          <camunda:formField id="reason" label="Reason" type="enum"><camunda:value id="price" name="Price"/><camunda:value id="stock" name="Stock"/></camunda:formField>
          <camunda:formField id="note" type="string"><camunda:validation><camunda:constraint name="required"/><camunda:constraint name="maxlength" config="200"/></camunda:validation></camunda:formField>
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:boundaryEvent id="no" attachedToRef="approve"><bpmn:errorEventDefinition errorRef="rejected"/></bpmn:boundaryEvent>
    <bpmn:endEvent id="done"/>
    <bpmn:endEvent id="refused"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="done"/>
    <bpmn:sequenceFlow id="f3" sourceRef="no" targetRef="refused"/>
  </bpmn:process>
</bpmn:definitions>`

// taskRow is the part of a task record the tests read.
type taskRow struct {
	ID          string         `json:"id"`
	Instance    string         `json:"instanceId"`
	Name        string         `json:"name"`
	State       string         `json:"state"`
	Assignee    string         `json:"assignee"`
	Priority    int            `json:"priority"`
	Variables   map[string]any `json:"variables"`
	CompletedBy string         `json:"completedBy"`
}

func TestTaskCommands(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "approve.bpmn", approvalBPMN))

	// taskOf waits until the instance's open task is listed and returns it.
	taskOf := func(instanceID string) taskRow {
		t.Helper()
		var task taskRow
		testwait.Until(t, 20*time.Second, "the task of "+instanceID+" to be listed", func() error {
			var list []taskRow
			if err := json.Unmarshal([]byte(c.ok("tasks", "list", "--instance", instanceID, "--json")), &list); err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 {
				return fmt.Errorf("%d tasks listed", len(list))
			}
			task = list[0]
			return nil
		})
		return task
	}

	big := strings.TrimSpace(c.ok("start", "approve-order", "--vars", `{"amount": 500}`))
	small := strings.TrimSpace(c.ok("start", "approve-order", "--vars", `{"amount": 20}`))
	bigTask, smallTask := taskOf(big), taskOf(small)

	t.Run("list by group, highest priority first", func(t *testing.T) {
		out := c.ok("tasks", "list", "--group", "accounting")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], bigTask.ID) || !strings.HasPrefix(lines[2], smallTask.ID) {
			t.Fatalf("tasks list --group accounting:\n%s\nwant the header, then %s (priority 80), then %s (40)", out, bigTask.ID, smallTask.ID)
		}
		if bigTask.Priority != 80 || bigTask.Name != "Approve order" || bigTask.Variables["amount"] != 500.0 {
			t.Errorf("task %+v: want priority 80, the name, and its input amount", bigTask)
		}
		if out := c.ok("tasks", "list", "--group", "sales"); strings.Count(out, "\n") != 1 {
			t.Errorf("another group's list:\n%s\nwant the header only", out)
		}
	})

	t.Run("claim, conflict, complete", func(t *testing.T) {
		if out := c.ok("task", "claim", bigTask.ID, "--user", "alice"); out != bigTask.ID+" claimed by alice\n" {
			t.Errorf("claim printed %q", out)
		}
		c.ok("task", "claim", bigTask.ID, "--user", "alice") // the holder again: fine
		c.fails(1, `assigned to alice`, "task", "claim", bigTask.ID, "--user", "bob")
		if out := c.ok("tasks", "list", "--assignee", "alice"); !strings.Contains(out, bigTask.ID) {
			t.Errorf("alice's tasks:\n%s\nlack %s", out, bigTask.ID)
		}
		c.ok("task", "update", bigTask.ID, "--priority", "90", "--due", "2027-01-15")
		show := c.ok("task", "show", bigTask.ID)
		for _, want := range []string{"state:", "assigned", "assignee:", "alice", "priority:", "90", "due:", "2027-01-15", "group:accounting", `"amount": 500`, "claim by bob: refused",
			"form:", "in the BPMN file (jetbpm task form " + bigTask.ID + ")"} {
			if !strings.Contains(show, want) {
				t.Errorf("task show lacks %q:\n%s", want, show)
			}
		}
		form := c.ok("task", "form", bigTask.ID)
		want := "VARIABLE  TYPE       LABEL     RULES\n" +
			"approved  checkbox   Approved  default false\n" +
			"reason    select     Reason    one of price, stock\n" +
			"note      textfield  note      required; maxLength 200\n"
		if form != want {
			t.Errorf("task form printed\n%s\nwant\n%s", form, want)
		}
		var schema struct {
			Schema struct{ Components []map[string]any }
		}
		if err := json.Unmarshal([]byte(c.ok("task", "form", bigTask.ID, "--json")), &schema); err != nil || len(schema.Schema.Components) != 3 {
			t.Errorf("task form --json: %+v %v", schema, err)
		}
		if out := c.ok("task", "complete", bigTask.ID, "--user", "alice", "--vars", `{"approved": true}`); out != bigTask.ID+" completed\n" {
			t.Errorf("complete printed %q", out)
		}
		v := c.waitInstance(big, func(v view) bool { return v.Status != "active" })
		if v.Status != "completed" || v.Variables["approved"] != true {
			t.Errorf("instance %s = %+v, want completed with approved", big, v)
		}
		c.fails(1, `completed by alice`, "task", "complete", bigTask.ID, "--user", "bob")
		var done taskRow
		if err := json.Unmarshal([]byte(c.ok("task", "show", bigTask.ID, "--json")), &done); err != nil {
			t.Fatal(err)
		}
		if done.State != "completed" || done.CompletedBy != "alice" {
			t.Errorf("completed task %+v", done)
		}
	})

	t.Run("a BPMN error takes the boundary", func(t *testing.T) {
		if out := c.ok("task", "error", smallTask.ID, "--code", "REJECTED", "--message", "too small to bother"); out != smallTask.ID+" error REJECTED\n" {
			t.Errorf("task error printed %q", out)
		}
		v := c.waitInstance(small, func(v view) bool { return v.Status != "active" })
		if v.Status != "completed" {
			t.Errorf("instance %s = %+v, want completed by the error path", small, v)
		}
		if out := c.ok("tasks", "list", "--group", "accounting"); strings.Count(out, "\n") != 1 {
			t.Errorf("open tasks after both ended:\n%s", out)
		}
		if out := c.ok("tasks", "list", "--state", "all", "--process", "approve-order"); strings.Count(out, "\n") != 3 {
			t.Errorf("tasks list --state all:\n%s\nwant both ended tasks", out)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		c.fails(2, `--user is required`, "task", "claim", "x")
		c.fails(2, `--code is required`, "task", "error", "x")
		c.fails(2, `nothing to update`, "task", "update", "x")
		c.fails(2, `--priority must be 0 to 100`, "task", "update", "x", "--priority", "101")
		c.fails(2, `--due: "tomorrow" is not an RFC 3339 time`, "task", "update", "x", "--due", "tomorrow")
		c.fails(2, `flag -state: want one of open, all`, "tasks", "list", "--state", "later")
		c.fails(1, `not found`, "task", "claim", "nope.t1", "--user", "alice")
		c.fails(1, `not found`, "task", "form", "nope.t1")
	})
}
