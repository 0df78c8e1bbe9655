package main

import (
	"flag"
	"net/http/httptest"
	"reflect"
	"testing"
)

func testFlagSet() (*flag.FlagSet, *bool, *string) {
	fs := newFlagSet("test")
	asJSON := fs.Bool("json", false, "")
	vars := fs.String("vars", "", "")
	fs.Int("n", 0, "")
	return fs, asJSON, vars
}

func TestReorderArgs(t *testing.T) {
	cases := []struct {
		args, want []string
	}{
		{nil, nil},
		{[]string{"a.bpmn", "--json"}, []string{"--json", "--", "a.bpmn"}},
		{[]string{"--json", "a.bpmn"}, []string{"--json", "--", "a.bpmn"}},
		{[]string{"p", "--vars", "{}", "q"}, []string{"--vars", "{}", "--", "p", "q"}},
		{[]string{"p", "--vars={}", "--json=false"}, []string{"--vars={}", "--json=false", "--", "p"}},
		{[]string{"p", "-n", "3", "-json"}, []string{"-n", "3", "-json", "--", "p"}},
		{[]string{"--vars", "--json", "a"}, []string{"--vars", "--json", "--", "a"}},
		{[]string{"a", "--", "--json", "b"}, []string{"--", "a", "--json", "b"}},
		{[]string{"--json", "--"}, []string{"--json"}},
		{[]string{"-", "--json"}, []string{"--json", "--", "-"}},
		{[]string{"a", "--unknown", "b"}, []string{"--unknown", "--", "a", "b"}},
		{[]string{"a", "--vars"}, []string{"--vars"}},
		{[]string{"--vars", ""}, []string{"--vars", ""}},
	}
	for _, c := range cases {
		fs, _, _ := testFlagSet()
		if got := reorderArgs(fs, c.args); !reflect.DeepEqual(got, c.want) {
			t.Errorf("reorderArgs(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	cases := []struct {
		args     []string
		asJSON   bool
		vars     string
		rest     []string
		usageErr bool
	}{
		{args: []string{"deploy.bpmn", "--json"}, asJSON: true, rest: []string{"deploy.bpmn"}},
		{args: []string{"--json", "deploy.bpmn"}, asJSON: true, rest: []string{"deploy.bpmn"}},
		{args: []string{"p", "--vars", `{"a":1}`}, vars: `{"a":1}`, rest: []string{"p"}},
		{args: []string{"--vars=x", "--", "-p"}, vars: "x", rest: []string{"-p"}},
		{args: []string{"--bogus"}, usageErr: true},
		{args: []string{"a", "--vars"}, usageErr: true},
		{args: []string{"--n", "x"}, usageErr: true},
	}
	for _, c := range cases {
		fs, asJSON, vars := testFlagSet()
		rest, err := parseArgs(fs, c.args)
		if c.usageErr {
			if _, ok := err.(*usageError); !ok {
				t.Errorf("parseArgs(%q) error = %v, want a usage error", c.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseArgs(%q): %v", c.args, err)
			continue
		}
		if *asJSON != c.asJSON || *vars != c.vars || !reflect.DeepEqual(rest, c.rest) {
			t.Errorf("parseArgs(%q): json=%v vars=%q rest=%q, want %v %q %q", c.args, *asJSON, *vars, rest, c.asJSON, c.vars, c.rest)
		}
	}
}

func TestHealthHandler(t *testing.T) {
	h := newHealth()
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != 503 || body != "starting\n" {
		t.Fatalf("starting: %d %q", code, body)
	}
	h.setReason("")
	if code, body := get(); code != 200 || body != "ok\n" {
		t.Fatalf("ready: %d %q", code, body)
	}
}
