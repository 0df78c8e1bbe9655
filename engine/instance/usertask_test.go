package instance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// approval is start → user task "review" (with opts) → end.
func approval(opts ...model.NodeOption) *model.Builder {
	return model.NewBuilder("approval").StartEvent("start").UserTask("review", opts...).EndEvent("end").
		Sequence("start", "review", "end")
}

// taskCmd is the event of command id on task.
func taskCmd(id, task string, op TaskOp, user string) Event {
	return Event{ID: id, Kind: UserTaskCommand, Task: &TaskCommand{Task: task, Op: op, User: user}}
}

// records returns the task records in the outbox, in order.
func records(s *State) []*Task {
	var out []*Task
	for _, e := range effects(s, PutTask) {
		out = append(out, e.Task)
	}
	return out
}

// record returns the one record of task id in the outbox.
func record(t testing.TB, s *State, id string) *Task {
	t.Helper()
	var found []*Task
	for _, rec := range records(s) {
		if rec.ID == id {
			found = append(found, rec)
		}
	}
	if len(found) != 1 {
		t.Fatalf("records of task %s in the outbox: %d, want 1 (outbox %v)", id, len(found), outboxIDs(s))
	}
	return found[0]
}

func outboxIDs(s *State) []string {
	var out []string
	for _, e := range s.Outbox {
		out = append(out, e.ID)
	}
	return out
}

// taskFacts returns the task facts in the outbox as "kind:task".
func taskFacts(s *State) []string {
	var out []string
	for _, e := range effects(s, PublishTaskFact) {
		out = append(out, string(e.TaskFact.Kind)+":"+e.TaskFact.Task)
	}
	return out
}

// openTask returns the task of the only wait at node other than its
// timeout listeners' timers.
func openTask(t testing.TB, s *State, node string) *Task {
	t.Helper()
	var found []*Wait
	for _, w := range s.Waits {
		if w.Node == node && w.Kind != TaskTimeoutWait {
			found = append(found, w)
		}
	}
	if len(found) != 1 || found[0].Kind != UserTaskWait || found[0].Task == nil {
		t.Fatalf("waits at %s: %s, want one user task wait", node, dumpWaits(s))
	}
	return s.Task(found[0].Task.ID)
}

// lastOutcome returns the newest outcome on rec, checking it is command id's.
func lastOutcome(t testing.TB, rec *Task, id string) TaskOutcome {
	t.Helper()
	if len(rec.Outcomes) == 0 {
		t.Fatalf("task %s lists no outcome, want %s's", rec.ID, id)
	}
	o := rec.Outcomes[len(rec.Outcomes)-1]
	if o.ID != id {
		t.Fatalf("task %s's last outcome is %+v, want command %s's", rec.ID, o, id)
	}
	return o
}

func TestUserTaskCreatesItsTask(t *testing.T) {
	s, _ := run(t, approval(model.Named("Review the order"), model.Input("total", "amount * 2"),
		model.WithHuman(model.Human{
			Assignee:        `"alice"`,
			CandidateUsers:  `"bob, carol ,, bob"`,
			CandidateGroups: `["sales", " ops ", ""]`,
			DueDate:         `"2026-12-01T17:00:00+02:00"`,
			FollowUpDate:    `"2015-10-06T16:34:42.000+0200"`,
			Priority:        `70`,
			FormKey:         "embedded:app:forms/review.html",
			FormID:          "review-form",
		})), map[string]any{"amount": 21})
	assertStatus(t, s, Active)
	w := waitAt(t, s, "review")
	tr := s.track(w.Track)
	if w.Kind != UserTaskWait || tr.State != Waiting || w.ID != fmt.Sprintf("i1/review/%d", tr.Activation) {
		t.Fatalf("wait %+v on track %+v, want a user task wait of the waiting track", w, tr)
	}
	want := &Task{
		ID: TaskID("i1", tr.Activation), Instance: "i1", ProcessID: "approval", Version: 1, Node: "review",
		Name: "Review the order", Assignee: "alice", CandidateUsers: []string{"bob", "carol"},
		CandidateGroups: []string{"sales", "ops"},
		DueDate:         time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC),
		FollowUpDate:    time.Date(2015, 10, 6, 14, 34, 42, 0, time.UTC),
		Priority:        70, FormKey: "embedded:app:forms/review.html", FormID: "review-form",
		Variables: map[string]any{"total": int64(42)}, CreatedAt: t0, State: TaskAssigned, Revision: 1,
	}
	rec := record(t, s, want.ID)
	if got, wantText := fmt.Sprintf("%+v", *rec), fmt.Sprintf("%+v", *want); got != wantText {
		t.Fatalf("record\n got %s\nwant %s", got, wantText)
	}
	if w.Task.Variables != nil {
		t.Errorf("the wait's task keeps variables %v: they are the track's locals", w.Task.Variables)
	}
	if got := fmt.Sprintf("%+v", *s.Task(want.ID)); got != fmt.Sprintf("%+v", *want) {
		t.Errorf("State.Task = %s, want the record", got)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"created:" + want.ID, "assigned:" + want.ID}) {
		t.Errorf("task facts %v, want created and assigned", got)
	}
	for _, e := range effects(s, PublishTaskFact) {
		f := e.TaskFact
		if f.ProcessID != "approval" || f.Instance != "i1" || f.Node != "review" || f.Assignee != "alice" ||
			f.Name != "Review the order" || !slices.Equal(f.CandidateGroups, want.CandidateGroups) || !f.Time.Equal(t0) ||
			f.ID != fmt.Sprintf("%s.1.%s", want.ID, f.Kind) || e.ID != "tfact:"+f.ID {
			t.Errorf("fact %+v (effect %s)", f, e.ID)
		}
	}
}

// Without a Human the task is open to anyone, with the default priority;
// an expression may give null for "nobody", a list for candidates, a date
// alone for midnight UTC and a number as text for the priority.
func TestUserTaskAttributesFromVariables(t *testing.T) {
	s, _ := run(t, approval(), nil)
	rec := openTask(t, s, "review")
	if rec.State != TaskCreated || rec.Assignee != "" || rec.Priority != DefaultTaskPriority || !rec.DueDate.IsZero() || rec.Variables != nil {
		t.Fatalf("task without a Human: %+v", rec)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"created:" + rec.ID}) {
		t.Errorf("task facts %v, want created only", got)
	}

	s, _ = run(t, approval(model.WithHuman(model.Human{
		Assignee: "owner", CandidateUsers: "users", CandidateGroups: "=groups",
		DueDate: "due", FollowUpDate: "follow", Priority: "prio",
	})), map[string]any{
		"users": "ann,ben", "groups": []any{"hr"}, "due": "2026-12-01", "follow": time.Date(2026, 11, 1, 8, 0, 0, 0, time.FixedZone("x", 3600)),
		"prio": "7",
	})
	rec = openTask(t, s, "review")
	if rec.State != TaskCreated || rec.Assignee != "" || !slices.Equal(rec.CandidateUsers, []string{"ann", "ben"}) ||
		!slices.Equal(rec.CandidateGroups, []string{"hr"}) || !rec.DueDate.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) ||
		!rec.FollowUpDate.Equal(time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC)) || rec.Priority != 7 {
		t.Fatalf("task %+v", rec)
	}
}

func TestTaskValueConversions(t *testing.T) {
	tests := []struct {
		name string
		conv func(any) (any, error)
		in   any
		want string // fmt %v of the value, or "error: fragment"
	}{
		{"user", wrap(taskUser), " al ", "al"},
		{"user null", wrap(taskUser), nil, ""},
		{"user number", wrap(taskUser), int64(7), "error: want a user id"},
		{"users list", wrap(taskUsers), []any{"a", "b", "a"}, "[a b]"},
		{"users text", wrap(taskUsers), " a , ,b", "[a b]"},
		{"users bad entry", wrap(taskUsers), []any{"a", int64(2)}, "error: entry 2 is int64 2"},
		{"users object", wrap(taskUsers), map[string]any{}, "error: an object"},
		{"time rfc3339", wrap(taskTime), "2026-01-02T03:04:05.5Z", "2026-01-02 03:04:05.5 +0000 UTC"},
		{"time camunda", wrap(taskTime), "2026-01-02T03:04:05.000-0100", "2026-01-02 04:04:05 +0000 UTC"},
		{"time no offset", wrap(taskTime), "2026-01-02T03:04:05", "2026-01-02 03:04:05 +0000 UTC"},
		{"time date", wrap(taskTime), "2026-01-02", "2026-01-02 00:00:00 +0000 UTC"},
		{"time empty", wrap(taskTime), "", "0001-01-01 00:00:00 +0000 UTC"},
		{"time bad", wrap(taskTime), "next week", `error: "next week" is not an ISO 8601 date-time`},
		{"time number", wrap(taskTime), int64(5), "error: want an ISO 8601 date-time"},
		{"priority", wrap(taskPriority), int64(0), "0"},
		{"priority float", wrap(taskPriority), float64(100), "100"},
		{"priority text", wrap(taskPriority), " 12 ", "12"},
		{"priority null", wrap(taskPriority), nil, "50"},
		{"priority high", wrap(taskPriority), int64(101), "error: priority 101 is outside 0 to 100"},
		{"priority negative", wrap(taskPriority), float64(-1), "error: priority -1 is outside 0 to 100"},
		{"priority fraction", wrap(taskPriority), 1.5, "error: 1.5 is not an integer"},
		{"priority word", wrap(taskPriority), "high", `error: "high" is not an integer`},
		{"priority bool", wrap(taskPriority), true, "error: want an integer from 0 to 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.conv(tt.in)
			if frag, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), frag) {
					t.Fatalf("got %v, %v; want an error containing %q", got, err, frag)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tt.want {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func wrap[T any](f func(any) (T, error)) func(any) (any, error) {
	return func(v any) (any, error) { return f(v) }
}

// A bad value raises an incident (cause expression) before anything is
// opened; a retry after the value is fixed creates the task. Here a
// non-interrupting timer on the stuck task fixes it.
func TestUserTaskBadValueIsAnIncident(t *testing.T) {
	b := approval(model.WithHuman(model.Human{Priority: "prio", DueDate: `"2026-12-01T17:00:00Z"`})).
		TimerBoundary("fix", "review", model.Duration("PT1H"), false).ScriptTask("set", "60", "prio").EndEvent("fixed").
		Sequence("fix", "set", "fixed")
	s, env := run(t, b, map[string]any{"prio": 150})
	inc := assertIncident(t, s, "review", `user task priority "prio": priority 150 is outside 0 to 100`)
	if inc.CauseClass != incidents.CauseExpression {
		t.Errorf("cause class %q, want expression", inc.CauseClass)
	}
	if len(records(s))+len(taskFacts(s)) != 0 || len(s.OpenTasks()) != 0 {
		t.Fatalf("a task that failed to be created was published: %v", outboxIDs(s))
	}
	fire(t, s, env, "fix")
	flush(s)
	apply(t, s, env, command(IncidentRetry, s.Incidents[0], "c1"))
	if len(s.Incidents) != 0 {
		t.Fatalf("incidents %+v after the retry, want it resolved", s.Incidents)
	}
	rec := openTask(t, s, "review")
	if rec.Priority != 60 || !rec.CreatedAt.Equal(env.Now) || record(t, s, rec.ID) == nil {
		t.Fatalf("task after the retry %+v", rec)
	}
}

func TestTaskIDs(t *testing.T) {
	id := TaskID("3zq0-a_b", 14)
	if id != "3zq0-a_b.t14" {
		t.Fatalf("TaskID = %q", id)
	}
	for in, want := range map[string]string{id: "3zq0-a_b", "i1_c7.t1": "i1_c7", "i1.t": "", "i1": "", ".t3": "", "i1.x3": "", "i1.t3x": "", "i1.t3.t4": ""} {
		got, ok := TaskInstance(in)
		if got != want || ok != (want != "") {
			t.Errorf("TaskInstance(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// The record as served: camelCase JSON, zero dates left out; and as stored:
// msgpack that reads back the same, and carries a command with it.
func TestTaskRecordEncoding(t *testing.T) {
	s, env := run(t, approval(model.Input("n", "1"), model.WithHuman(model.Human{CandidateGroups: `"ops"`, DueDate: `"2026-12-01"`})), nil)
	id := openTask(t, s, "review").ID
	apply(t, s, env, taskCmd("c1", id, TaskClaim, "alice"))
	rec := openTask(t, s, "review")
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"assignee", "candidateGroups", "claimedBy", "createdAt", "dueDate", "id", "instanceId", "nodeId",
		"outcomes", "priority", "processId", "revision", "state", "variables", "version"}
	if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
		t.Fatalf("JSON fields %v, want %v (%s)", got, want, b)
	}
	if fields["dueDate"] != "2026-12-01T00:00:00Z" || fields["state"] != "assigned" {
		t.Errorf("JSON %s", b)
	}

	data, err := msgpack.Marshal(Event{ID: "c2", Kind: UserTaskCommand, Task: &TaskCommand{Task: id, Op: TaskComplete, Vars: map[string]any{"x": int64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := msgpack.Unmarshal(data, &ev); err != nil || ev.Task == nil || ev.Task.Op != TaskComplete || ev.Task.Task != id {
		t.Fatalf("command round trip: %+v, %v", ev.Task, err)
	}
	// An update that clears a date carries a zero time, which must arrive
	// as a zero time, not as "leave it".
	var zero time.Time
	var lowest int
	data, err = msgpack.Marshal(TaskCommand{Task: id, Op: TaskUpdate, DueDate: &zero, Priority: &lowest})
	if err != nil {
		t.Fatal(err)
	}
	var upd TaskCommand
	if err := msgpack.Unmarshal(data, &upd); err != nil || upd.DueDate == nil || !upd.DueDate.IsZero() || upd.FollowUpDate != nil || upd.Priority == nil || *upd.Priority != 0 {
		t.Fatalf("update round trip: %+v, %v", upd, err)
	}
	data, err = msgpack.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var back Task
	if err := msgpack.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	back.DueDate, back.CreatedAt = back.DueDate.UTC(), back.CreatedAt.UTC()
	back.Outcomes[0].Time = back.Outcomes[0].Time.UTC()
	if got, want := fmt.Sprintf("%+v", back), fmt.Sprintf("%+v", *rec); got != want {
		t.Fatalf("msgpack round trip\n got %s\nwant %s", got, want)
	}
}
