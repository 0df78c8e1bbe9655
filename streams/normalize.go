package streams

import (
	"reflect"
	"sync"
	"time"
)

// normalize walks a value msgpack decoded by reflection and gives it the
// same JSON-like form the direct decoder produces: small uint64 in interface
// values become int64, times become UTC. Maps inside interface values came
// from decodeMapHook and are already JSON-like; what is left are scalars and
// slices that msgpack decoded into interfaces, typed map[string]any values,
// and time.Time fields. A per-type plan visits only those, so a struct
// without any of them costs one map lookup.
func normalize(v reflect.Value) {
	if fix := planFor(v.Type()); fix != nil && v.CanSet() {
		fix(v)
	}
}

// fixer normalizes an addressable value in place.
type fixer func(reflect.Value)

var (
	plans    sync.Map // reflect.Type → fixer (nil: nothing to do)
	timeType = reflect.TypeFor[time.Time]()
)

func planFor(t reflect.Type) fixer {
	if p, ok := plans.Load(t); ok {
		return p.(fixer)
	}
	building := map[reflect.Type]*fixer{}
	fix := buildPlan(t, building)
	// Publish only finished plans: a plan of a recursive type reads its own
	// reference, which is set once its build returns.
	for typ, ref := range building {
		plans.Store(typ, *ref)
	}
	return fix
}

// buildPlan builds t's plan. building holds the plans of this pass, so a
// recursive type (type Node struct{ Kids []Node }) refers to its own plan
// instead of recursing forever.
func buildPlan(t reflect.Type, building map[reflect.Type]*fixer) fixer {
	if p, ok := plans.Load(t); ok {
		return p.(fixer)
	}
	if ref, ok := building[t]; ok {
		if *ref != nil {
			return *ref
		}
		return func(v reflect.Value) { // t is still being built: defer the lookup
			if *ref != nil {
				(*ref)(v)
			}
		}
	}
	ref := new(fixer)
	building[t] = ref
	*ref = makePlan(t, building)
	return *ref
}

func makePlan(t reflect.Type, building map[reflect.Type]*fixer) fixer {
	if t == timeType {
		return func(v reflect.Value) { v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC())) }
	}
	switch t.Kind() {
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return nil // msgpack decodes only into empty interfaces
		}
		return func(v reflect.Value) {
			if v.IsNil() {
				return
			}
			if x, changed := normalizeAny(v.Elem().Interface()); changed {
				v.Set(reflect.ValueOf(x))
			}
		}
	case reflect.Pointer:
		elem := buildPlan(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value) {
			if !v.IsNil() {
				elem(v.Elem())
			}
		}
	case reflect.Slice, reflect.Array:
		elem := buildPlan(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value) {
			for i := range v.Len() {
				elem(v.Index(i))
			}
		}
	case reflect.Map:
		elem := buildPlan(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value) {
			tmp := reflect.New(t.Elem()).Elem()
			iter := v.MapRange()
			for iter.Next() {
				tmp.Set(iter.Value()) // map values are not addressable
				elem(tmp)
				v.SetMapIndex(iter.Key(), tmp)
			}
		}
	case reflect.Struct:
		type field struct {
			index int
			fix   fixer
		}
		var fields []field
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue // msgpack does not decode them either
			}
			if fix := buildPlan(f.Type, building); fix != nil {
				fields = append(fields, field{i, fix})
			}
		}
		if len(fields) == 0 {
			return nil
		}
		return func(v reflect.Value) {
			for _, f := range fields {
				f.fix(v.Field(f.index))
			}
		}
	}
	return nil
}

// normalizeAny fixes a value msgpack put in an interface. Slices are fixed
// in place; maps were built by decodeMapHook and need nothing.
func normalizeAny(x any) (any, bool) {
	switch x := x.(type) {
	case uint64, time.Time:
		return jsonScalar(x), true
	case []any:
		for i, e := range x {
			if y, changed := normalizeAny(e); changed {
				x[i] = y
			}
		}
	}
	return x, false
}
