package bpmnxml

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// timerStartDoc is a process started by a timer start event "s" whose
// definition is def.
func timerStartDoc(def string) string {
	return proc(`<bpmn:startEvent id="s"><bpmn:timerEventDefinition>` + def + `</bpmn:timerEventDefinition></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e"/>
<bpmn:endEvent id="e"/>`)
}

func TestTimerStartImport(t *testing.T) {
	cases := []struct {
		name, def string
		want      model.Timer
	}{
		{"Camunda 7 cycle", `<bpmn:timeCycle xsi:type="bpmn:tFormalExpression">R3/PT10M</bpmn:timeCycle>`, model.Cycle("R3/PT10M")},
		{"Camunda 7 date", `<bpmn:timeDate xsi:type="bpmn:tFormalExpression">2027-01-01T00:00:00Z</bpmn:timeDate>`, model.Date("2027-01-01T00:00:00Z")},
		{"Zeebe cycle with a start", `<bpmn:timeCycle xsi:type="bpmn:tFormalExpression">="R/2027-01-01T00:00:00Z/P1D"</bpmn:timeCycle>`, model.Cycle("R/2027-01-01T00:00:00Z/P1D")},
		{"Zeebe duration", `<bpmn:timeDuration xsi:type="bpmn:tFormalExpression">=duration("PT1H")</bpmn:timeDuration>`, model.Duration("PT1H")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, timerStartDoc(tc.def))
			starts := p.TimerStarts()
			if len(starts) != 1 || starts[0].ID != "s" {
				t.Fatalf("timer starts %v", starts)
			}
			if tm := starts[0].Timer; tm == nil || tm.Type != tc.want.Type || tm.Value != tc.want.Value {
				t.Fatalf("timer %+v, want %+v", tm, tc.want)
			}
		})
	}
}

// TestTimerStartImportCron checks that a cron cycle is read in the
// file's dialect: Quartz in a Camunda 7 file, Spring (Zeebe's) otherwise.
func TestTimerStartImportCron(t *testing.T) {
	const platform = `id="defs" xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="%s">`
	cycle := `<bpmn:timeCycle xsi:type="bpmn:tFormalExpression">0 0 9 ? * 1</bpmn:timeCycle>`
	armed := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC) // a Monday
	for _, tc := range []struct {
		name, src string
		quartz    bool
		first     time.Time
	}{
		{"Camunda 7 by its modeler mark", strings.Replace(timerStartDoc(cycle), `id="defs">`, fmt.Sprintf(platform, "Camunda Platform"), 1), true, time.Date(2026, 5, 10, 9, 0, 0, 0, time.UTC)},
		{"Camunda 7 by its extensions", strings.Replace(timerStartDoc(cycle), `<bpmn:process id="p" isExecutable="true">`, `<bpmn:process id="p" isExecutable="true" camunda:historyTimeToLive="P180D">`, 1), true, time.Date(2026, 5, 10, 9, 0, 0, 0, time.UTC)},
		{"Zeebe", strings.Replace(timerStartDoc(cycle), `id="defs">`, fmt.Sprintf(platform, "Camunda Cloud"), 1), false, time.Date(2026, 5, 11, 9, 0, 0, 0, time.UTC)},
		{"no dialect", timerStartDoc(cycle), false, time.Date(2026, 5, 11, 9, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := mustParse(t, tc.src).Node("s").Timer
			if tm == nil || tm.Quartz != tc.quartz || !tm.IsCron() {
				t.Fatalf("timer %+v, want a cron cycle with Quartz %v", tm, tc.quartz)
			}
			if due, ok := tm.Due(armed, 0); !ok || !due.Equal(tc.first) {
				t.Fatalf("first fire %v, want %v", due, tc.first)
			}
		})
	}
}

func TestTimerStartImportRefusesBadCron(t *testing.T) {
	src := timerStartDoc(`<bpmn:timeCycle xsi:type="bpmn:tFormalExpression">0 0 9 * * MON-FOO</bpmn:timeCycle>`)
	err := parseErr(t, src)
	line := lineOf(t, src, `<bpmn:startEvent id="s"`)
	for _, want := range []string{fmt.Sprintf(`element "s" (line %d)`, line), `day-of-week field "MON-FOO": "FOO" is not a number or name`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
