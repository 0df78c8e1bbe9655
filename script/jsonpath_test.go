package script

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const holidays = `{"Neujahrstag": {"datum": "2014-01-01", "hinweis": ""},
 "Karfreitag": {"datum": "2014-04-18", "hinweis": ""},
 "list": [{"n": 1, "tag": "a"}, {"n": 2, "tag": "b"}, {"n": 3, "tag": null}]}`

func TestJSONPath(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(holidays), &doc); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]any{
		`$.Neujahrstag.datum`:                   {"2014-01-01"},
		`$['Karfreitag']['datum']`:              {"2014-04-18"},
		`$..[?(@.datum=='2014-04-18')].datum`:   {"2014-04-18"},
		`$..[?(@.datum == "2099-01-01")]`:       nil,
		`$.list[1].tag`:                         {"b"},
		`$.list[-1].n`:                          {3.0},
		`$.list[*].n`:                           {1.0, 2.0, 3.0},
		`$.list[?(@.n >= 2 && @.tag)].tag`:      {"b"},
		`$.list[?(@.n < 2 || @.tag == null)].n`: {1.0, 3.0},
		`$.list[?(@.n != 2)].n`:                 {1.0, 3.0},
		`$..n`:                                  {1.0, 2.0, 3.0},
		`$.*.datum`:                             {"2014-04-18", "2014-01-01"}, // by property name
		`$.missing.deeper`:                      nil,
		`$.list[7]`:                             nil,
	} {
		steps, err := compilePath(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := evalPath(steps, doc); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	for path, msg := range map[string]string{
		`list`:                          "a path starts with $",
		`$.`:                            "expected a property name",
		`$[`:                            "expected a name, an index",
		`$[?(@.a == )]`:                 "expected a literal",
		`$[?(a == 1)]`:                  "expected @",
		`$['a`:                          "unclosed quote",
		`$.a[1`:                         "expected ]",
		`$[?(@.a == 1]`:                 "expected ) closing the filter",
		`$` + strings.Repeat(".a", 600): "at most 1000",
	} {
		if _, err := compilePath(path); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%.40s: %v, want %q", path, err, msg)
		}
	}
}

// FuzzJSONPath: any path compiles or is refused, and evaluates without a
// panic.
func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{`$..[?(@.datum=='x')]`, `$.a[0].b`, `$[*]`, `$.l[?(@.n > 1 && @.t || @.u != null)]`} {
		f.Add(s)
	}
	var doc any
	_ = json.Unmarshal([]byte(holidays), &doc)
	f.Fuzz(func(t *testing.T, path string) {
		steps, err := compilePath(path)
		if err != nil {
			return
		}
		_ = evalPath(steps, doc)
	})
}
