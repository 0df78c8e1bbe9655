package instance

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

type named string

type point struct {
	X   int     `json:"x"`
	Y   float64 `json:"y,omitempty"`
	Tag *string `json:"tag"`
}

func TestNormalize(t *testing.T) {
	str := "s"
	var nilMap map[string]int
	var nilSlice []string
	var nilPtr *int
	seven := 7
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"bool", true, true},
		{"string", "x", "x"},
		{"named string", named("n"), "n"},
		{"int", 3, int64(3)},
		{"int8", int8(-3), int64(-3)},
		{"int32", int32(1 << 30), int64(1 << 30)},
		{"int64", int64(math.MaxInt64), int64(math.MaxInt64)},
		{"uint16", uint16(65535), int64(65535)},
		{"uint64 fits", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"uint64 too big", uint64(math.MaxUint64), float64(math.MaxUint64)},
		{"float32", float32(0.25), 0.25},
		{"float64", 1.5, 1.5},
		{"negative zero", math.Copysign(0, -1), math.Copysign(0, -1)},
		{"time", time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("X", 3600)), "2026-01-02T02:04:05.0000006Z"},
		{"json int", json.Number("42"), int64(42)},
		{"json float", json.Number("4.5"), 4.5},
		{"json exp", json.Number("1e3"), float64(1000)},
		{"json huge", json.Number("123456789012345678901234"), 123456789012345678901234.0},
		{"pointer", &seven, int64(7)},
		{"nil pointer", nilPtr, nil},
		{"nil map", nilMap, nil},
		{"nil slice", nilSlice, nil},
		{"empty slice", []string{}, []any{}},
		{"array", [2]int{1, 2}, []any{int64(1), int64(2)}},
		{"typed slice", []float32{0.5}, []any{0.5}},
		{"typed map", map[string]uint{"a": 1}, map[string]any{"a": int64(1)}},
		{"named key type", map[named]int{"a": 1}, map[string]any{"a": int64(1)}},
		{"nested any", map[string]any{"l": []any{nil, "x", map[string]any{"n": json.Number("1")}}},
			map[string]any{"l": []any{nil, "x", map[string]any{"n": int64(1)}}}},
		{"struct", point{X: 1, Tag: &str}, map[string]any{"x": int64(1), "tag": "s"}},
		{"struct pointer", &point{X: 2, Y: 0.5}, map[string]any{"x": int64(2), "y": 0.5, "tag": nil}},
		{"struct in slice", []point{{X: 3}}, []any{map[string]any{"x": int64(3), "tag": nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%#v) error: %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Normalize(%#v) = %#v, want %#v", tt.in, got, tt.want)
			}
			// Normalizing is idempotent.
			again, err := Normalize(got)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("Normalize is not idempotent: %#v, %v", again, err)
			}
		})
	}
}

func TestNormalizeRefuses(t *testing.T) {
	tests := []struct {
		name     string
		in       any
		fragment string
	}{
		{"NaN", math.NaN(), "not a storable number"},
		{"+Inf", math.Inf(1), "not a storable number"},
		{"float32 -Inf", float32(math.Inf(-1)), "not a storable number"},
		{"NaN nested", map[string]any{"a": []any{1, math.NaN()}}, "not a storable number"},
		{"bad json number", json.Number("12abc"), "bad number"},
		{"int keys", map[int]string{1: "a"}, "map keys must be strings"},
		{"nil map with int keys", map[int]string(nil), "map keys must be strings"},
		{"any keys nested", map[string]any{"m": map[any]any{"a": 1}}, "map keys must be strings"},
		{"chan", make(chan int), "cannot store a value of type chan int"},
		{"func", func() {}, "cannot store"},
		{"complex", complex(1, 2), "cannot store"},
		{"struct with chan", struct{ C chan int }{make(chan int)}, "cannot store"},
		{"struct with NaN", struct{ F float64 }{math.NaN()}, "cannot store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err == nil {
				t.Fatalf("Normalize = %#v, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.fragment) {
				t.Errorf("error %q does not contain %q", err, tt.fragment)
			}
		})
	}
}

func nestMaps(levels int) any {
	var v any = "leaf"
	for range levels {
		v = map[string]any{"k": v}
	}
	return v
}

func nestSlices(levels int) any {
	var v any = int64(1)
	for range levels {
		v = []any{v}
	}
	return v
}

func nestTyped(levels int) any {
	type node struct {
		Next *node `json:"next,omitempty"`
	}
	var n *node
	for range levels {
		n = &node{Next: n}
	}
	return n
}

// TestNormalizeDepthLimit: JSON-like values nested up to maxDepth levels are
// stored; deeper ones are refused with a clear error.
func TestNormalizeDepthLimit(t *testing.T) {
	for _, tt := range []struct {
		name string
		nest func(int) any
	}{
		{"map[string]any", nestMaps},
		{"[]any", nestSlices},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Normalize(tt.nest(maxDepth)); err != nil {
				t.Errorf("%d levels refused: %v", maxDepth, err)
			}
			_, err := Normalize(tt.nest(maxDepth + 2))
			if err == nil || !strings.Contains(err.Error(), "nested deeper than") {
				t.Errorf("%d levels: err = %v, want the depth error", maxDepth+2, err)
			}
		})
	}
	t.Run("self-referencing pointer", func(t *testing.T) {
		var v any
		v = &v
		if _, err := Normalize(v); err == nil {
			t.Error("a pointer cycle was accepted")
		}
	})
	t.Run("deep struct", func(t *testing.T) {
		if _, err := Normalize(nestTyped(1000)); err == nil {
			t.Error("1000 nested structs accepted")
		}
	})
}

func TestNormalizeSharesNothing(t *testing.T) {
	inner := map[string]any{"a": []any{1}}
	in := map[string]any{"m": inner}
	out, err := NormalizeVars(in)
	if err != nil {
		t.Fatal(err)
	}
	inner["a"].([]any)[0] = 2
	inner["b"] = 3
	want := map[string]any{"m": map[string]any{"a": []any{int64(1)}}}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("output changed with its input: %#v", out)
	}
}

func TestNormalizeVarsNamesVariable(t *testing.T) {
	_, err := NormalizeVars(map[string]any{"ok": 1, "bad": math.Inf(1)})
	if err == nil || !strings.Contains(err.Error(), `variable "bad"`) {
		t.Errorf("err = %v", err)
	}
	out, err := NormalizeVars(nil)
	if err != nil || out == nil || len(out) != 0 {
		t.Errorf("NormalizeVars(nil) = %#v, %v; want an empty map", out, err)
	}
}
