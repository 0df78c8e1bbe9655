package bpmnxml

import (
	"fmt"
	"strings"
	"testing"

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

func TestTimerStartImportRefusesCron(t *testing.T) {
	src := timerStartDoc(`<bpmn:timeCycle xsi:type="bpmn:tFormalExpression">0 0 9 * * ?</bpmn:timeCycle>`)
	err := parseErr(t, src)
	line := lineOf(t, src, `<bpmn:startEvent id="s"`)
	for _, want := range []string{fmt.Sprintf(`element "s" (line %d)`, line), "cron timer cycles are not supported yet"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
