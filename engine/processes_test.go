package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// nightlyXML is a process started by a timer cycle; NAME is replaced to
// make a new version.
const nightlyXML = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:process id="nightly" name="NAME" isExecutable="true">
    <bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeCycle>R/2099-01-01T00:00:00Z/PT24H</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="tick" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

const plainXML = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d2">
  <bpmn:process id="plain" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

func TestProcessesListAndSources(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := ctxT(t)

	if list, err := eng.Processes(ctx); err != nil || len(list) != 0 {
		t.Fatalf("Processes before any deploy = %v, %v; want none", list, err)
	}
	v1 := strings.Replace(nightlyXML, "NAME", "Nightly", 1)
	v2 := strings.Replace(nightlyXML, "NAME", "Nightly report", 1)
	if _, err := eng.DeployResources(ctx, engine.Resource{Name: "nightly.bpmn", XML: []byte(v1)}, engine.Resource{Name: "plain.bpmn", XML: []byte(plainXML)}); err != nil {
		t.Fatal(err)
	}
	deps, err := eng.DeployXML(ctx, strings.NewReader(v2))
	if err != nil || deps[0].Version != 2 || !deps[0].New {
		t.Fatalf("second deploy = %+v, %v; want nightly v2", deps, err)
	}
	if _, err := eng.Deploy(ctx, scriptProcess(t, "built", "1")); err != nil {
		t.Fatal(err)
	}

	list, err := eng.Processes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, []string{"built", "nightly", "plain"}) {
		t.Fatalf("Processes ids = %v; want built, nightly, plain", ids)
	}
	n := list[1]
	if n.Name != "Nightly report" || n.Version != 2 || !slices.Equal(n.Versions, []int{1, 2}) || !n.HasSource || n.DeployedAt.IsZero() {
		t.Errorf("nightly = %+v", n)
	}
	if len(n.TimerStarts) != 1 || n.TimerStarts[0] != (engine.TimerStartInfo{Node: "tick", Type: "cycle", Value: "R/2099-01-01T00:00:00Z/PT24H"}) {
		t.Errorf("nightly timer starts = %+v", n.TimerStarts)
	}
	if list[0].HasSource || len(list[0].TimerStarts) != 0 || !slices.Equal(list[0].Versions, []int{1}) {
		t.Errorf("built = %+v; want no source, no timer start, version 1", list[0])
	}

	// Each version keeps its own document.
	for v, want := range map[int]string{0: v2, 1: v1, 2: v2} {
		got, err := eng.ProcessSource(ctx, "nightly", v)
		if err != nil || string(got) != want {
			t.Errorf("ProcessSource(nightly, %d) = %.60q…, %v; want its document", v, got, err)
		}
	}
	if got, err := eng.ProcessSource(ctx, "plain", 0); err != nil || string(got) != plainXML {
		t.Errorf("ProcessSource(plain) = %.60q…, %v; want its document", got, err)
	}
	info, err := eng.ProcessInfo(ctx, "nightly", 1)
	if err != nil || info.Name != "Nightly" || info.Version != 1 || !slices.Equal(info.Versions, []int{1, 2}) {
		t.Errorf("ProcessInfo(nightly, 1) = %+v, %v", info, err)
	}
	for _, c := range []struct {
		id string
		v  int
	}{{"nosuch", 0}, {"nightly", 3}, {"built", 0}} {
		if _, err := eng.ProcessSource(ctx, c.id, c.v); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("ProcessSource(%s, %d) = %v; want ErrNotFound", c.id, c.v, err)
		}
	}
	for _, c := range []struct {
		id string
		v  int
	}{{"nosuch", 0}, {"nightly", 3}} {
		if _, err := eng.ProcessInfo(ctx, c.id, c.v); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("ProcessInfo(%s, %d) = %v; want ErrNotFound", c.id, c.v, err)
		}
	}
}

func TestDeployResourcesRefusesBadInput(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := ctxT(t)

	_, err := eng.DeployResources(ctx, engine.Resource{Name: "a.bpmn", XML: []byte(plainXML)}, engine.Resource{Name: "b.bpmn", XML: []byte(plainXML)})
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), `b.bpmn: process "plain" is also in a.bpmn`) {
		t.Errorf("a process in two files: %v", err)
	}
	_, err = eng.DeployResources(ctx, engine.Resource{Name: "ok.bpmn", XML: []byte(nightlyXML)}, engine.Resource{Name: "bad.bpmn", XML: []byte("<nope")})
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "bad.bpmn") {
		t.Errorf("a document that does not import: %v", err)
	}
	if _, err := eng.DeployResources(ctx); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("no files: %v", err)
	}
	requireNotDeployed(t, eng, "plain", "nightly")
}
