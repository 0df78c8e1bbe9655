package script

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/dop251/goja"
)

// facade is what one run sees of the engine: Camunda 7's `execution`,
// the variables by name and `S(json)`.
type facade struct {
	vm    *goja.Runtime
	env   Env
	vars  map[string]any // what the script sees, its own sets over env's
	sets  []Set
	bound map[string]bool // the globals that are variables
	task  *Task           // Env.Task's copy, which task.set... changes
}

func newFacade(vm *goja.Runtime, env Env) *facade {
	vars := maps.Clone(env.Vars)
	if vars == nil {
		vars = map[string]any{}
	}
	f := &facade{vm: vm, env: env, vars: vars, bound: map[string]bool{}}
	if env.Task != nil {
		f.task = env.Task.clone()
	}
	return f
}

// reserved are the globals the facade owns: a variable of one of these
// names is read with execution.getVariable only.
var reserved = map[string]bool{"execution": true, "task": true, "S": true, "connector": true}

func (f *facade) bind() error {
	for _, name := range slices.Sorted(maps.Keys(f.env.Vars)) {
		if err := f.global(name, f.env.Vars[name]); err != nil {
			return err
		}
	}
	ex := f.vm.NewObject()
	x := f.env.Execution
	for name, fn := range map[string]any{
		"getVariable":            f.getVariable,
		"getVariableLocal":       f.getVariable,
		"getVariables":           f.getVariables,
		"getVariablesLocal":      f.getVariables,
		"hasVariable":            f.hasVariable,
		"hasVariableLocal":       f.hasVariable,
		"setVariable":            func(name string, v goja.Value) error { return f.set(name, v, false) },
		"setVariableLocal":       func(name string, v goja.Value) error { return f.set(name, v, true) },
		"getProcessInstanceId":   func() string { return x.ProcessInstanceID },
		"getBusinessKey":         func() string { return x.BusinessKey },
		"getProcessBusinessKey":  func() string { return x.BusinessKey },
		"getActivityId":          func() string { return x.ActivityID },
		"getCurrentActivityId":   func() string { return x.ActivityID },
		"getProcessDefinitionId": func() string { return x.ProcessDefinitionID },
		"getId":                  func() string { return x.ID },
	} {
		if err := ex.Set(name, fn); err != nil {
			return err
		}
	}
	if err := f.vm.Set("execution", ex); err != nil {
		return err
	}
	// A Camunda 7 connector's output scripts read the connector's
	// response (response, statusCode, headers) and the variables through
	// connector, as through execution.
	con := f.vm.NewObject()
	for _, name := range []string{"getVariable", "getVariables", "hasVariable", "setVariable", "setVariableLocal"} {
		if err := con.Set(name, ex.Get(name)); err != nil {
			return err
		}
	}
	if err := f.vm.Set("connector", con); err != nil {
		return err
	}
	if f.task != nil {
		if err := f.bindTask(ex); err != nil {
			return err
		}
	}
	return f.vm.Set("S", f.spin)
}

// value is v as the script sees it: a copy (goja shows a Go map or
// slice as an object that writes through to it), so that what the script
// does to it changes nothing outside the run.
func (f *facade) value(v any) goja.Value {
	c, err := normalize(v, 0)
	if err != nil {
		return goja.Undefined()
	}
	return f.vm.ToValue(c)
}

func (f *facade) getVariable(name string) goja.Value {
	v, ok := f.vars[name]
	if !ok {
		return goja.Null()
	}
	return f.value(v)
}

func (f *facade) getVariables() goja.Value { return f.value(f.vars) }

func (f *facade) hasVariable(name string) bool {
	_, ok := f.vars[name]
	return ok
}

// set records execution.setVariable(name, v): later reads in the run see
// it.
func (f *facade) set(name string, v goja.Value, local bool) error {
	if name == "" {
		return fmt.Errorf("setVariable: a variable needs a name")
	}
	x, err := export(v)
	if err != nil {
		return fmt.Errorf("setVariable(%q): %w", name, err)
	}
	f.vars[name] = x
	f.sets = append(f.sets, Set{Name: name, Value: x, Local: local})
	// Camunda 7 resolves a script's names through the execution, so a
	// variable set is read by its name from then on.
	return f.global(name, x)
}

// global binds variable name to v as a global of the script, unless the
// name cannot be written in a script or belongs to the runtime (JSON,
// Math, ...) or the facade.
func (f *facade) global(name string, v any) error {
	if reserved[name] || !identifier(name) || !f.bound[name] && f.vm.GlobalObject().Get(name) != nil {
		return nil
	}
	f.bound[name] = true
	if err := f.vm.Set(name, f.value(v)); err != nil {
		return fmt.Errorf("variable %q: %w", name, err)
	}
	return nil
}

// spin is S(x): x parsed when it is JSON text, as it is otherwise, with
// the calls of Camunda Spin's JSON API the examples use.
func (f *facade) spin(call goja.FunctionCall) goja.Value {
	var v any
	arg := call.Argument(0)
	if s, ok := arg.Export().(string); ok {
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			panic(f.vm.NewTypeError("S: not JSON: " + err.Error()))
		}
	} else if x, err := export(arg); err == nil {
		v = x
	} else {
		panic(f.vm.NewTypeError("S: " + err.Error()))
	}
	n, err := normalize(v, 0)
	if err != nil {
		panic(f.vm.NewTypeError("S: " + err.Error()))
	}
	return f.spinObject(n)
}

func (f *facade) spinObject(v any) goja.Value {
	o := f.vm.NewObject()
	get := func(name string) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		x, ok := m[name]
		return x, ok
	}
	must := func(err error) {
		if err != nil {
			panic(f.vm.NewGoError(err))
		}
	}
	must(o.Set("prop", func(name string) goja.Value {
		x, ok := get(name)
		if !ok {
			panic(f.vm.NewTypeError(fmt.Sprintf("S: no property %q", name)))
		}
		return f.spinObject(x)
	}))
	must(o.Set("hasProp", func(name string) bool { _, ok := get(name); return ok }))
	must(o.Set("elements", func() []goja.Value {
		list, ok := v.([]any)
		if !ok {
			panic(f.vm.NewTypeError("S: elements() of a value that is not an array"))
		}
		out := make([]goja.Value, len(list))
		for i, e := range list {
			out[i] = f.spinObject(e)
		}
		return out
	}))
	must(o.Set("value", func() goja.Value { return f.vm.ToValue(v) }))
	must(o.Set("stringValue", func() string { s, _ := v.(string); return s }))
	must(o.Set("numberValue", func() goja.Value { return f.vm.ToValue(v) }))
	must(o.Set("boolValue", func() bool { b, _ := v.(bool); return b }))
	must(o.Set("isNull", func() bool { return v == nil }))
	must(o.Set("isObject", func() bool { _, ok := v.(map[string]any); return ok }))
	must(o.Set("isArray", func() bool { _, ok := v.([]any); return ok }))
	text := func() string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	must(o.Set("jsonPath", func(path string) goja.Value {
		steps, err := compilePath(path)
		if err != nil {
			panic(f.vm.NewTypeError("S: " + err.Error()))
		}
		return f.spinQuery(path, evalPath(steps, v))
	}))
	must(o.Set("toString", text))
	must(o.Set("toJSON", func() goja.Value { return f.vm.ToValue(v) }))
	// Unwrapped when the script sets or returns it (export).
	must(o.Set("__spin", true))
	return o
}

// spinQuery is what Spin's jsonPath(path) gives: element() (the one
// value it selects), elementList() (an array of them, with Java's
// isEmpty(), size() and get(i) as the scripts call them), and the one
// value's stringValue(), numberValue() and boolValue().
func (f *facade) spinQuery(path string, found []any) goja.Value {
	q := f.vm.NewObject()
	one := func() any {
		if len(found) != 1 {
			panic(f.vm.NewTypeError(fmt.Sprintf("S: jsonPath %q selects %d elements, not one", path, len(found))))
		}
		return found[0]
	}
	must := func(err error) {
		if err != nil {
			panic(f.vm.NewGoError(err))
		}
	}
	must(q.Set("element", func() goja.Value { return f.spinObject(one()) }))
	must(q.Set("elementList", func() goja.Value {
		items := make([]any, len(found))
		for i, e := range found {
			items[i] = f.spinObject(e)
		}
		list := f.vm.NewArray(items...)
		must(list.Set("isEmpty", func() bool { return len(found) == 0 }))
		must(list.Set("size", func() int { return len(found) }))
		must(list.Set("get", func(i int) goja.Value {
			if i < 0 || i >= len(found) {
				panic(f.vm.NewTypeError(fmt.Sprintf("S: get(%d) of %d elements", i, len(found))))
			}
			return items[i].(goja.Value)
		}))
		return list
	}))
	must(q.Set("stringValue", func() string { s, _ := one().(string); return s }))
	must(q.Set("numberValue", func() goja.Value { return f.vm.ToValue(one()) }))
	must(q.Set("boolValue", func() bool { b, _ := one().(bool); return b }))
	return q
}

// identifier reports whether name can be written as a script's variable:
// an ASCII identifier that is not a reserved word.
func identifier(name string) bool {
	if name == "" || keywords[name] {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_' || r == '$' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}

var keywords = map[string]bool{
	"break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true, "debugger": true,
	"default": true, "delete": true, "do": true, "else": true, "export": true, "extends": true, "finally": true,
	"for": true, "function": true, "if": true, "import": true, "in": true, "instanceof": true, "new": true,
	"return": true, "super": true, "switch": true, "this": true, "throw": true, "try": true, "typeof": true,
	"var": true, "void": true, "while": true, "with": true, "yield": true, "let": true, "static": true,
	"enum": true, "await": true, "null": true, "true": true, "false": true, "undefined": true, "NaN": true, "Infinity": true,
}
