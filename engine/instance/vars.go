package instance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/script"
)

// scopeChain returns the scopes from the root down to scopeID.
func (r *runner) scopeChain(scopeID string) []*Scope {
	var chain []*Scope
	for id := scopeID; id != ""; {
		sc := r.s.scope(id)
		if sc == nil {
			r.bug("unknown scope %q", id)
		}
		chain = append(chain, sc)
		id = sc.Parent
	}
	slices.Reverse(chain)
	return chain
}

// visible returns the variables t can see: its scopes' from the root down,
// inner ones shadowing outer ones, then its own locals.
func (r *runner) visible(t *Track) map[string]any { return r.visibleWith(t, t.Locals) }

func (r *runner) visibleWith(t *Track, locals map[string]any) map[string]any {
	out := map[string]any{}
	for _, sc := range r.scopeChain(t.Scope) {
		maps.Copy(out, sc.Vars)
	}
	maps.Copy(out, locals)
	return out
}

// inputs evaluates n's input mappings into a fresh local map. On a mapping
// error the node faults and ok is false.
func (r *runner) inputs(t *Track, n *model.Node) (locals map[string]any, ok bool) {
	if len(n.Inputs) == 0 {
		return nil, true
	}
	env := r.visible(t)
	locals = make(map[string]any, len(n.Inputs))
	for i := range n.Inputs {
		m := &n.Inputs[i]
		v, sets, err := r.evalMapping(t, n, m, env)
		if err != nil {
			r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("input mapping %q: %v", m.Target, err))
			return nil, false
		}
		for _, set := range sets {
			sv, ok := r.checkVar(t, n, set.Name, set.Value)
			if !ok {
				return nil, false
			}
			if set.Local {
				locals[set.Name] = sv
			} else {
				r.storeVar(t.Scope, set.Name, sv)
			}
			env[set.Name] = sv
		}
		if v, err = Normalize(v); err != nil {
			r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("input mapping %q: %v", m.Target, err))
			return nil, false
		}
		name := assign(locals, m, v, nil)
		env[name] = locals[name]
	}
	return locals, true
}

// assign writes v at mapping m's target in vars and returns the variable
// it wrote: the target itself, or for a nested target ("a.b.c") the
// object variable a, with property b.c set to v — a copy of what vars
// holds for a (else of base, its value outside vars; nil for none) with
// the objects on the way created where they are missing or are not
// objects, as Zeebe creates them.
func assign(vars map[string]any, m *model.Mapping, v any, base map[string]any) string {
	name, path := m.TargetPath()
	if path == nil {
		vars[name] = v
		return name
	}
	root, ok := vars[name]
	if !ok {
		root = base[name]
	}
	obj, _ := deepCopy(root).(map[string]any)
	if obj == nil {
		obj = map[string]any{}
	}
	at := obj
	for _, p := range path[:len(path)-1] {
		next, _ := at[p].(map[string]any)
		if next == nil {
			next = map[string]any{}
			at[p] = next
		}
		at = next
	}
	at[path[len(path)-1]] = v
	vars[name] = obj
	return name
}

// setVar writes a variable where it is defined — the nearest scope from
// scopeID up that has it — or at the process level when none has it (the
// Camunda and Zeebe propagation rule). It faults the node when the value
// is refused.
func (r *runner) checkVar(t *Track, n *model.Node, name string, v any) (any, bool) {
	v, err := r.checkValue(name, v)
	if err != nil {
		r.fault(t, n, incidents.CauseDataFlow, err.Error())
		return nil, false
	}
	return v, true
}

// checkValue normalizes v and checks it against the engine's limits.
func (r *runner) checkValue(name string, v any) (any, error) {
	v, err := Normalize(v)
	if err == nil && r.env.CheckValue != nil {
		err = r.env.CheckValue(name, v)
	}
	if err != nil {
		return nil, fmt.Errorf("variable %q: %w", name, err)
	}
	return v, nil
}

func (r *runner) storeVar(scopeID, name string, v any) {
	chain := r.scopeChain(scopeID)
	target, existed := chain[0], false
	for i := len(chain) - 1; i >= 0; i-- {
		if _, ok := chain[i].Vars[name]; ok {
			target, existed = chain[i], true
			break
		}
	}
	if target.Vars == nil {
		target.Vars = map[string]any{}
	}
	target.Vars[name] = v
	r.wrote(target, name, existed)
}

// setVars applies the operator's SetVars event ev once: its variables are
// written to the root scope, in name order, through the same write path
// as a node's outputs, so conditional events see each as a create or an
// update. Values the edge vetted are vetted again (the same checks); an
// event with a refused value changes nothing.
func (r *runner) setVars(ev Event) bool {
	if ev.ID == "" || slices.Contains(r.s.Correlations, ev.ID) {
		return false
	}
	names := sortedKeys(ev.Vars)
	values := make(map[string]any, len(names))
	for _, k := range names {
		v, err := Normalize(ev.Vars[k])
		if err == nil && r.env.CheckValue != nil {
			err = r.env.CheckValue(k, v)
		}
		if err != nil || k == "" {
			return false
		}
		values[k] = v
	}
	r.rememberID(ev.ID)
	for _, k := range names {
		r.storeVar(RootScope, k, values[k])
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// NormalizeVars returns vars with every value made JSON-like (see Normalize).
func NormalizeVars(vars map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		n, err := Normalize(v)
		if err != nil {
			return nil, fmt.Errorf("variable %q: %w", k, err)
		}
		out[k] = n
	}
	return out, nil
}

// Normalize converts v to the JSON-like values a checkpoint stores: nil,
// bool, string, int64, float64, []any and map[string]any (time.Time becomes
// RFC 3339 text; json.Number an int64 or float64). Integers that do not fit
// int64 become float64. The result shares nothing with v, so a value read
// back from a checkpoint equals the one the step kept in memory.
func Normalize(v any) (any, error) { return normalize(reflect.ValueOf(v), 0) }

const maxDepth = 64

func normalize(v reflect.Value, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	if !v.IsValid() {
		return nil, nil
	}
	switch x := v.Interface().(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("bad number %q", x)
		}
		return f, nil
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.String:
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := v.Uint(); u <= math.MaxInt64 {
			return int64(u), nil
		}
		return float64(v.Uint()), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a storable number", f)
		}
		return f, nil
	case reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return normalize(v.Elem(), depth) // an interface wraps, it does not nest
	case reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		return normalize(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil, nil
		}
		out := make([]any, v.Len())
		for i := range out {
			e, err := normalize(v.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map keys must be strings, not %s", v.Type().Key())
		}
		if v.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			e, err := normalize(it.Value(), depth+1)
			if err != nil {
				return nil, err
			}
			out[it.Key().String()] = e
		}
		return out, nil
	case reflect.Struct:
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, fmt.Errorf("cannot store %s: %v", v.Type(), err)
		}
		var m any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		return normalize(reflect.ValueOf(m), depth+1)
	}
	return nil, fmt.Errorf("cannot store a value of type %s", v.Type())
}

// deepCopyMap copies JSON-like values so an operation cannot change the
// state through its input.
func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// evalMapping evaluates mapping m of node n over env: an expression's
// value, or a JavaScript program's last value and the variables it set
// (script.Set), in order.
func (r *runner) evalMapping(t *Track, n *model.Node, m *model.Mapping, env map[string]any) (any, []script.Set, error) {
	p := m.Program()
	if p == nil {
		v, err := m.Compiled().Eval(env)
		return v, nil, err
	}
	res, err := p.Run(context.Background(), script.Env{Vars: env, Execution: r.execution(n.ID, t.ID)}, r.env.Scripts)
	if err != nil {
		return nil, nil, err
	}
	return res.Value, res.Sets, nil
}
