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
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// incidentOf starts calc without a (the script's nil arithmetic raises an
// expression incident on t) and returns the incident id once its record is
// listed: the record is an effect, published just after the checkpoint
// that shows the incident.
func (f *fixture) incidentOf(t *testing.T, id string) string {
	t.Helper()
	f.start(t, api.StartRequest{ProcessID: "calc", ID: id, Vars: json.RawMessage(`{"tag": "` + id + `"}`)})
	v := f.waitIncident(t, id)
	testwait.Until(t, 10*time.Second, "the incident of "+id+" to be listed", func() error {
		list, err := f.client.Incidents(ctxT(t), api.IncidentListRequest{Instance: id})
		if err == nil && len(list) != 1 {
			err = fmt.Errorf("listed: %v", recordIDs(list))
		}
		return err
	})
	return v.Incidents[0].ID
}

func kinds(r *incidents.Record) []incidents.Kind {
	var out []incidents.Kind
	for _, h := range r.History {
		out = append(out, h.Kind)
	}
	return out
}

func recordIDs(list []*incidents.Record) []string {
	var out []string
	for _, r := range list {
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out
}

func TestIncidentOperations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "calc.bpmn", XML: calcXML}, api.File{Name: "greet.bpmn", XML: greetXML})
	retried, resolved, abandoned := f.incidentOf(t, "i-retry"), f.incidentOf(t, "i-resolve"), f.incidentOf(t, "i-abandon")

	// list: every record, and each filter.
	all, err := f.client.Incidents(ctx, api.IncidentListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("list = %v, want 3 incidents", recordIDs(all))
	}
	for _, r := range all {
		if r.ProcessID != "calc" || r.Version != 1 || r.Node != "t" || r.CauseClass != incidents.CauseExpression ||
			r.State != incidents.Open || r.Attempts != 1 || len(r.Lineage) != 1 || r.FirstFailure.IsZero() ||
			!strings.Contains(r.Cause(), "script") || !slices.Equal(kinds(r), []incidents.Kind{incidents.Raised}) {
			t.Errorf("record %+v", r)
		}
	}
	for _, c := range []struct {
		req  api.IncidentListRequest
		want []string
	}{
		{api.IncidentListRequest{Instance: "i-resolve"}, []string{resolved}},
		{api.IncidentListRequest{Process: "calc", Node: "t", Cause: "expression", State: "open", OlderThan: "0s"}, []string{abandoned, resolved, retried}},
		{api.IncidentListRequest{State: "all"}, []string{abandoned, resolved, retried}},
		{api.IncidentListRequest{State: "closed"}, nil},
		{api.IncidentListRequest{Process: "greet"}, nil},
		{api.IncidentListRequest{Node: "s"}, nil},
		{api.IncidentListRequest{Cause: "operation"}, nil},
		{api.IncidentListRequest{OlderThan: "1h"}, nil},
		{api.IncidentListRequest{OlderThan: "2d"}, nil},
	} {
		got, err := f.client.Incidents(ctx, c.req)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if err != nil || !slices.Equal(recordIDs(got), want) {
			t.Errorf("list %+v = %v, %v; want %v", c.req, recordIDs(got), err, want)
		}
	}
	for _, req := range []api.IncidentListRequest{{State: "bogus"}, {OlderThan: "soon"}, {OlderThan: "-1h"}, {OlderThan: "xd"}} {
		if _, err := f.client.Incidents(ctx, req); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("list %+v: %v, want ErrInvalid", req, err)
		}
	}

	// get: the record with the variables the node saw.
	v, err := f.client.Incident(ctx, retried)
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != retried || v.Instance != "i-retry" || len(v.Variables) != 1 || v.Variables[0].Attempt != 1 ||
		v.Variables[0].Vars["tag"] != "i-retry" || v.Variables[0].Incident != retried {
		t.Errorf("get = %+v, snapshots %+v", v.Record, v.Variables)
	}

	// retry: the script fails again in the same step, one attempt more.
	v, err = f.client.RetryIncident(ctx, retried)
	if err != nil {
		t.Fatal(err)
	}
	if v.State != incidents.Open || v.Attempts != 2 || len(v.Lineage) != 2 || len(v.Variables) != 2 ||
		!slices.Equal(kinds(v.Record), []incidents.Kind{incidents.Raised, incidents.Retried, incidents.Raised}) ||
		!strings.HasPrefix(v.History[1].Command, "cmd:") {
		t.Errorf("after retry: %+v", v.Record)
	}

	// resolve with variables: the instance continues from t and completes.
	for _, vars := range []string{`[1]`, `"x"`, `3`, `true`} {
		if _, err := f.client.ResolveIncident(ctx, resolved, json.RawMessage(vars)); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("resolve with vars %s: %v, want ErrInvalid", vars, err)
		}
	}
	if _, err := f.client.ResolveIncident(ctx, resolved, json.RawMessage(`{"big": "`+strings.Repeat("x", 300<<10)+`"}`)); !errors.Is(err, engine.ErrTooLarge) {
		t.Errorf("resolve with a 300 KiB variable: %v, want ErrTooLarge", err)
	}
	v, err = f.client.ResolveIncident(ctx, resolved, json.RawMessage(`{"b": 7}`))
	if err != nil {
		t.Fatal(err)
	}
	if v.State != incidents.Resolved || !slices.Equal(kinds(v.Record), []incidents.Kind{incidents.Raised, incidents.ResolvedKind}) {
		t.Errorf("after resolve: %+v", v.Record)
	}
	if iv := f.waitDone(t, "i-resolve"); iv.Status != instance.Completed || iv.Variables["b"] != int64(7) {
		t.Errorf("instance after resolve = %+v, want completed with b 7", iv)
	}

	// abandon: dead-lettered, and the instance, left without a token, ends.
	v, err = f.client.AbandonIncident(ctx, abandoned)
	if err != nil {
		t.Fatal(err)
	}
	if v.State != incidents.DeadLettered || !slices.Equal(kinds(v.Record), []incidents.Kind{incidents.Raised, incidents.DeadLetterKind}) {
		t.Errorf("after abandon: %+v", v.Record)
	}
	if iv := f.waitDone(t, "i-abandon"); iv.Status != instance.Terminated {
		t.Errorf("instance after abandon = %+v, want terminated", iv)
	}
	closed, err := f.client.Incidents(ctx, api.IncidentListRequest{State: "closed"})
	if want := []string{abandoned, resolved}; err != nil || !slices.Equal(recordIDs(closed), want) {
		t.Errorf("closed = %v, %v; want %v", recordIDs(closed), err, want)
	}

	// Actions on closed incidents are refused, naming the state.
	for id, state := range map[string]string{resolved: "resolved", abandoned: "deadLettered"} {
		for name, call := range map[string]func() (*engine.IncidentView, error){
			"retry":   func() (*engine.IncidentView, error) { return f.client.RetryIncident(ctx, id) },
			"resolve": func() (*engine.IncidentView, error) { return f.client.ResolveIncident(ctx, id, nil) },
			"abandon": func() (*engine.IncidentView, error) { return f.client.AbandonIncident(ctx, id) },
		} {
			_, err := call()
			var ae *api.Error
			if !errors.Is(err, engine.ErrFinished) || !errors.As(err, &ae) || ae.Code != "finished" || ae.Message != "incident "+id+" is "+state {
				t.Errorf("%s of %s incident: %#v, want code finished, %q", name, state, err, "incident "+id+" is "+state)
			}
		}
	}

	// Unknown incidents are not found.
	for _, id := range []string{"nope", "i-retry/t/999", "", "a.b", "*", "i-retry"} {
		if _, err := f.client.Incident(ctx, id); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("get %q: %v, want ErrNotFound", id, err)
		}
		if _, err := f.client.RetryIncident(ctx, id); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("retry %q: %v, want ErrNotFound", id, err)
		}
		if _, err := f.client.ResolveIncident(ctx, id, json.RawMessage(`{"b": 1}`)); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("resolve %q: %v, want ErrNotFound", id, err)
		}
		if _, err := f.client.AbandonIncident(ctx, id); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("abandon %q: %v, want ErrNotFound", id, err)
		}
	}
	// The retried incident is still open and operable.
	if iv, err := f.client.Instance(ctx, "i-retry"); err != nil || iv.Status != engine.StatusIncident || len(iv.Incidents) != 1 || iv.Incidents[0].Attempts != 2 {
		t.Errorf("i-retry = %+v, %v; want still an incident with 2 attempts", iv, err)
	}
}

func TestIncidentRawRequests(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, op := range []string{api.OpIncidentList, api.OpIncidentGet, api.OpIncidentRetry, api.OpIncidentResolve, api.OpIncidentAbandon} {
		for _, body := range []string{"{not json", "", "[]", `{"id": 5, "state": 1, "vars": 1}`, "\x00\xff"} {
			_, e := rawReply(t, f.nc, op, []byte(body))
			if e == nil || e.Code != "invalid" {
				t.Errorf("%s with body %q: error %+v, want code invalid", op, body, e)
			}
		}
	}
	res, e := rawReply(t, f.nc, api.OpIncidentList, []byte(`{}`))
	if e != nil || string(res) != `{"incidents":[],"total":0}` {
		t.Errorf("empty list = %s, %+v; want an empty array, not null", res, e)
	}
	_, e = rawReply(t, f.nc, api.OpIncidentGet, []byte(`{"id": "x/y/1"}`))
	if e == nil || e.Code != "not_found" {
		t.Errorf("get of an unknown incident: %+v, want code not_found", e)
	}
}

// Pages of an incident list: limit with the next and prev cursors walks
// the list both ways without overlap or gap, a cursor stays valid when its
// record no longer matches, and bad paging is refused.
func TestIncidentListPages(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "calc.bpmn", XML: calcXML})
	var ids []string
	for i := range 5 {
		ids = append(ids, f.incidentOf(t, fmt.Sprintf("p-%d", i)))
	}
	all, err := f.client.IncidentPage(ctx, api.IncidentListRequest{})
	if err != nil || len(all.Incidents) != 5 || all.Total != 5 || all.Next != "" || all.Prev != "" {
		t.Fatalf("unpaged list = %+v, %v; want 5 records, total 5, no cursors", all, err)
	}
	order := func(list []*incidents.Record) []string {
		var out []string
		for _, r := range list {
			out = append(out, r.ID)
		}
		return out
	}
	want := order(all.Incidents)
	if slices.Sort(ids); !slices.Equal(recordIDs(all.Incidents), ids) {
		t.Fatalf("list = %v, want the incidents %v", want, ids)
	}
	if !slices.IsSortedFunc(all.Incidents, func(a, b *incidents.Record) int {
		if c := a.FirstFailure.Compare(b.FirstFailure); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}) {
		t.Fatalf("list not ordered by first failure, then id: %v", want)
	}

	// Forward by two: [0 1] [2 3] [4].
	var got []string
	var pages []*api.IncidentListResponse
	req := api.IncidentListRequest{Limit: 2}
	for {
		p, err := f.client.IncidentPage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != 5 || len(p.Incidents) > 2 {
			t.Fatalf("page %d = %v total %d", len(pages), order(p.Incidents), p.Total)
		}
		if (len(pages) == 0) != (p.Prev == "") {
			t.Errorf("page %d prev %q: want one on every page but the first", len(pages), p.Prev)
		}
		pages = append(pages, p)
		got = append(got, order(p.Incidents)...)
		if p.Next == "" {
			break
		}
		if len(pages) > 5 {
			t.Fatalf("more pages than records: %v", got)
		}
		req.After = p.Next
	}
	if len(pages) != 3 || !slices.Equal(got, want) {
		t.Fatalf("forward pages = %v in %d pages, want %v in 3", got, len(pages), want)
	}
	// Back from the last page: prev gives [2 3], then [0 1] with no prev.
	back, err := f.client.IncidentPage(ctx, api.IncidentListRequest{Limit: 2, Before: pages[2].Prev})
	if err != nil || !slices.Equal(order(back.Incidents), want[2:4]) || back.Next == "" || back.Prev == "" {
		t.Fatalf("before the last page = %+v, %v; want %v with both cursors", back, err, want[2:4])
	}
	back, err = f.client.IncidentPage(ctx, api.IncidentListRequest{Limit: 2, Before: back.Prev})
	if err != nil || !slices.Equal(order(back.Incidents), want[0:2]) || back.Prev != "" || back.Next == "" {
		t.Fatalf("the first page backwards = %+v, %v; want %v, no prev", back, err, want[0:2])
	}

	// The record a cursor came from is abandoned: open incidents after it
	// still start at the record that followed it.
	if _, err := f.client.AbandonIncident(ctx, want[1]); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the abandoned incident to leave the open list", func() error {
		p, err := f.client.IncidentPage(ctx, api.IncidentListRequest{State: "open", Limit: 2, After: pages[0].Next})
		if err == nil && (!slices.Equal(order(p.Incidents), want[2:4]) || p.Total != 4) {
			err = fmt.Errorf("open after the first page = %v total %d, want %v total 4", order(p.Incidents), p.Total, want[2:4])
		}
		return err
	})
	// Past the end (after the last record, the position pages[2].Prev
	// names): an empty page whose prev leads back.
	end, err := f.client.IncidentPage(ctx, api.IncidentListRequest{Limit: 2, After: pages[2].Prev})
	if err != nil || len(end.Incidents) != 0 || end.Next != "" || end.Prev != pages[2].Prev {
		t.Fatalf("after the last record = %+v, %v; want an empty page with prev %q", end, err, pages[2].Prev)
	}
	last, err := f.client.IncidentPage(ctx, api.IncidentListRequest{After: pages[1].Next})
	if err != nil || !slices.Equal(order(last.Incidents), want[4:]) || last.Next != "" {
		t.Fatalf("after the second page, no limit = %+v, %v", last, err)
	}

	for _, req := range []api.IncidentListRequest{{Limit: -1}, {After: "not a cursor!"}, {Before: "eA"}, {After: "MjAyNi0xMi0wMg"}, {After: pages[0].Next, Before: pages[1].Next}} {
		if _, err := f.client.IncidentPage(ctx, req); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("list %+v: %v, want ErrInvalid", req, err)
		}
	}
}
