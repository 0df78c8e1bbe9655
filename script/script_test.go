package script_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/script"
)

func run(t *testing.T, src string, env script.Env, lim script.Limits) (script.Result, error) {
	t.Helper()
	p, err := script.Compile("t", src)
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	return p.Run(context.Background(), env, lim)
}

// What a Camunda 7 script does with execution and its variables.
func TestFacade(t *testing.T) {
	env := script.Env{
		Vars: map[string]any{"amount": int64(120), "customer": map[string]any{"name": "Ada", "tags": []any{"vip"}}, "my-var": "x"},
		Execution: script.Execution{ProcessInstanceID: "i-1", BusinessKey: "order-7", ActivityID: "score",
			ProcessDefinitionID: "loan:3", ID: "i-1/t2"},
	}
	res, err := run(t, `
		var total = amount * 2;
		execution.setVariable("total", total);
		execution.setVariableLocal("seen", execution.getVariable("total") + 1);
		execution.setVariable("who", customer.name + "/" + execution.getVariable("customer").tags[0]);
		execution.setVariable("ids", [execution.getProcessInstanceId(), execution.getBusinessKey(),
			execution.getActivityId(), execution.getProcessDefinitionId(), execution.getId()]);
		execution.setVariable("has", [execution.hasVariable("my-var"), execution.hasVariable("nope"), execution.getVariable("nope")]);
		execution.setVariable("obj", {a: 1.5, b: [true, null], c: "s"});
		customer.name = "changed"; // a copy: nothing outside the run changes
		total > 200`, env, script.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Value != true {
		t.Errorf("value %#v, want true", res.Value)
	}
	want := []script.Set{
		{Name: "total", Value: int64(240)},
		{Name: "seen", Value: int64(241), Local: true},
		{Name: "who", Value: "Ada/vip"},
		{Name: "ids", Value: []any{"i-1", "order-7", "score", "loan:3", "i-1/t2"}},
		{Name: "has", Value: []any{true, false, nil}},
		{Name: "obj", Value: map[string]any{"a": 1.5, "b": []any{true, nil}, "c": "s"}},
	}
	if !reflect.DeepEqual(res.Sets, want) {
		t.Errorf("sets\n%#v\nwant\n%#v", res.Sets, want)
	}
	if env.Vars["customer"].(map[string]any)["name"] != "Ada" {
		t.Errorf("the run changed its input: %v", env.Vars["customer"])
	}
}

// S(json) reads JSON as Camunda Spin does, and a Spin value set or
// returned is its JSON value.
func TestSpin(t *testing.T) {
	res, err := run(t, `
		var order = S('{"id": 7, "items": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}], "note": null}');
		var n = 0;
		order.prop("items").elements().forEach(function (e) { n += e.prop("qty").numberValue(); });
		execution.setVariable("count", n);
		execution.setVariable("first", order.prop("items").elements()[0].prop("sku").stringValue());
		execution.setVariable("flags", [order.hasProp("note"), order.prop("note").isNull(), order.prop("items").isArray()]);
		execution.setVariable("text", order.prop("items").elements()[1].toString());
		order.prop("items")`, script.Env{}, script.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []script.Set{
		{Name: "count", Value: int64(3)},
		{Name: "first", Value: "a"},
		{Name: "flags", Value: []any{true, true, true}},
		{Name: "text", Value: `{"qty":1,"sku":"b"}`},
	}
	if !reflect.DeepEqual(res.Sets, want) {
		t.Errorf("sets %#v", res.Sets)
	}
	items := []any{map[string]any{"sku": "a", "qty": int64(2)}, map[string]any{"sku": "b", "qty": int64(1)}}
	if !reflect.DeepEqual(res.Value, items) {
		t.Errorf("value %#v, want %#v", res.Value, items)
	}
}

// A script that does not compile is refused with its line and column; one
// that throws, runs too long, allocates too much or recurses too deep is
// an *Error that says so; none of it panics.
func TestFailures(t *testing.T) {
	_, err := script.Compile("calc", "var a = 1;\nvar b = ;\n")
	var e *script.Error
	if !errors.As(err, &e) || e.Line != 2 || !strings.Contains(e.Error(), `script "calc" line 2:`) || !strings.Contains(e.Error(), "SyntaxError") {
		t.Fatalf("compile error %v (%#v)", err, e)
	}

	for _, c := range []struct {
		name, src string
		lim       script.Limits
		limit     string
		text      string
	}{
		{"throws", "var x = null;\nx.y", script.Limits{}, "", "TypeError"},
		{"throws a value", `throw "no credit"`, script.Limits{}, "", "no credit"},
		{"loops", "while (true) {}", script.Limits{Timeout: 50 * time.Millisecond}, "time", "50ms time limit"},
		{"allocates", "var a = []; while (true) { a.push('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' + a.length); }",
			script.Limits{Memory: 8 << 20, Timeout: 20 * time.Second}, "memory", "8 MiB memory limit"},
		{"recurses", "function f(n) { return f(n + 1) + 1; } f(0)", script.Limits{StackDepth: 100}, "stack", ""},
		{"returns a function", "(function () {})", script.Limits{}, "", "cannot be a variable"},
		{"sets a function", "execution.setVariable('f', function () {})", script.Limits{}, "", "cannot be a variable"},
		{"reaches for Java", "Java.type('java.lang.System')", script.Limits{}, "", "ReferenceError: Java is not defined"},
		{"reaches for require", "require('fs')", script.Limits{}, "", "ReferenceError: require is not defined"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := run(t, c.src, script.Env{}, c.lim)
			var e *script.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want a *script.Error", err)
			}
			if e.Limit != c.limit || !strings.Contains(e.Error(), c.text) {
				t.Fatalf("error %q (limit %q), want limit %q and %q", e.Error(), e.Limit, c.limit, c.text)
			}
		})
	}

	// A context that ends stops the run.
	p, err := script.Compile("spin", "while (true) {}")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := p.Run(ctx, script.Env{}, script.Limits{Timeout: time.Minute}); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("run past its context: %v", err)
	}
}

// Variables whose names a script cannot write are read with getVariable;
// a variable does not hide a built-in.
func TestNames(t *testing.T) {
	res, err := run(t, `[typeof JSON.parse, execution.getVariable("JSON"), execution.getVariable("order-id"), typeof execution]`,
		script.Env{Vars: map[string]any{"JSON": "mine", "order-id": int64(4), "execution": "x"}}, script.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"function", "mine", int64(4), "object"}; !reflect.DeepEqual(res.Value, want) {
		t.Fatalf("value %#v, want %#v", res.Value, want)
	}
}

// A variable the script sets is read by its name from then on, as
// Camunda 7's script bindings resolve names through the execution.
func TestSetThenRead(t *testing.T) {
	res, err := run(t, `execution.setVariable("late", 2); execution.setVariable("amount", amount + late); amount`,
		script.Env{Vars: map[string]any{"amount": int64(5)}}, script.Limits{})
	if err != nil || res.Value != int64(7) {
		t.Fatalf("value %#v, %v; want 7", res.Value, err)
	}
}

func TestIsJavaScript(t *testing.T) {
	for f, want := range map[string]bool{"javascript": true, "JavaScript": true, "js": true, "ECMAScript": true, " javascript ": true,
		"groovy": false, "feel": false, "": false, "python": false} {
		if got := script.IsJavaScript(f); got != want {
			t.Errorf("IsJavaScript(%q) = %v", f, got)
		}
	}
}

// A compiled program runs in many goroutines at once.
func TestConcurrentRuns(t *testing.T) {
	p, err := script.Compile("sq", "n * n")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			res, err := p.Run(context.Background(), script.Env{Vars: map[string]any{"n": int64(i)}}, script.Limits{})
			if err == nil && res.Value != int64(i*i) {
				err = errors.New("wrong square")
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkRun(b *testing.B) {
	p, err := script.Compile("calc", `execution.setVariable("total", amount * 2); amount > 100`)
	if err != nil {
		b.Fatal(err)
	}
	env := script.Env{Vars: map[string]any{"amount": int64(120), "customer": "Ada"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Run(context.Background(), env, script.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// A task listener's script sees the task as Camunda 7's DelegateTask: it
// reads the task and changes its assignee, priority and candidates, and
// its variables are its execution's; the run's Task is the task as the
// script left it, the Env's stays as it was.
func TestTaskFacade(t *testing.T) {
	task := &script.Task{ID: "i-1/t3", Name: "Review", DefinitionKey: "review", EventName: "create",
		Priority: 50, CandidateGroups: []string{"sales"}}
	env := script.Env{Vars: map[string]any{"amount": int64(900)}, Execution: script.Execution{ProcessInstanceID: "i-1"}, Task: task}
	res, err := run(t, `
		if (task.getAssignee() === null && amount > 500) { task.setAssignee("boss"); }
		task.setPriority(task.getPriority() + 20);
		task.addCandidateUser("ada"); task.addCandidateUser("ada"); task.deleteCandidateGroup("sales");
		task.setVariable("seen", [task.getId(), task.getName(), task.getTaskDefinitionKey(), task.getEventName(),
			task.getProcessInstanceId(), task.getExecution().getProcessInstanceId(), task.getVariable("amount")]);`, env, script.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := &script.Task{ID: "i-1/t3", Name: "Review", DefinitionKey: "review", EventName: "create",
		Assignee: "boss", Priority: 70, CandidateUsers: []string{"ada"}, CandidateGroups: []string{}}
	if !reflect.DeepEqual(res.Task, want) {
		t.Errorf("task %+v, want %+v", res.Task, want)
	}
	if task.Assignee != "" || task.Priority != 50 || len(task.CandidateGroups) != 1 {
		t.Errorf("the run changed its Env's task: %+v", task)
	}
	if len(res.Sets) != 1 || !reflect.DeepEqual(res.Sets[0].Value, []any{"i-1/t3", "Review", "review", "create", "i-1", "i-1", int64(900)}) {
		t.Errorf("sets %+v", res.Sets)
	}
	for _, bad := range []string{`task.setPriority(101)`, `task.setPriority(1.5)`, `task.setAssignee(7)`} {
		if _, err := run(t, bad, env, script.Limits{}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if res, err := run(t, `typeof task`, script.Env{}, script.Limits{}); err != nil || res.Value != "undefined" || res.Task != nil {
		t.Errorf("without a task: %v %v", res, err)
	}
}

// Camunda 7's rest-service example's output script (parseHoliday.js,
// Apache-2.0): the connector's response through connector, Spin's
// jsonPath with a filter, elementList().isEmpty().
func TestSpinJSONPathAndConnector(t *testing.T) {
	const parseHoliday = `
const response = connector.getVariable("response");
const date = connector.getVariable("date");
const holidays = S(response);
const query = ` + "`$..[?(@.datum=='${date}')]`" + `;
!holidays.jsonPath(query).elementList().isEmpty();`
	response := `{"Neujahrstag": {"datum": "2014-01-01", "hinweis": ""}, "Karfreitag": {"datum": "2014-04-18", "hinweis": ""}}`
	for date, want := range map[string]bool{"2014-04-18": true, "2014-04-19": false} {
		res, err := run(t, parseHoliday, script.Env{Vars: map[string]any{"response": response, "date": date}}, script.Limits{})
		if err != nil || res.Value != want {
			t.Errorf("%s: %v (%v), want %v", date, res.Value, err, want)
		}
	}
	res, err := run(t, `var q = S('{"a": [{"n": 1}, {"n": 2}]}').jsonPath("$.a[?(@.n > 1)]");
		[q.elementList().size(), q.element().prop("n").numberValue(), S('{"x": "y"}').jsonPath("$.x").stringValue()]`, script.Env{}, script.Limits{})
	if want := []any{int64(1), int64(2), "y"}; err != nil || !reflect.DeepEqual(res.Value, want) {
		t.Errorf("query: %#v (%v), want %#v", res.Value, err, want)
	}
	if _, err := run(t, `S('{"a": [1, 2]}').jsonPath("$.a[*]").element()`, script.Env{}, script.Limits{}); err == nil || !strings.Contains(err.Error(), "selects 2 elements, not one") {
		t.Errorf("element() of two: %v", err)
	}
	if _, err := run(t, `S('{}').jsonPath("a.b")`, script.Env{}, script.Limits{}); err == nil || !strings.Contains(err.Error(), "a path starts with $") {
		t.Errorf("a bad path: %v", err)
	}
}
