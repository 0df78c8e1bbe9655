package bpmnxml

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

const header = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="defs">
`

// doc wraps definitions-level content.
func doc(body string) string { return header + body + "\n</bpmn:definitions>\n" }

// proc wraps flow elements in executable process "p".
func proc(body string) string {
	return doc(`<bpmn:process id="p" isExecutable="true">` + "\n" + body + "\n</bpmn:process>")
}

// around puts task (whose id must be "t") between a start and an end event.
func around(task string) string {
	return proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
` + task + `
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
<bpmn:endEvent id="e"/>`)
}

func mustParse(t *testing.T, xml string) *model.Process {
	t.Helper()
	ps, err := Parse(strings.NewReader(xml))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, xml)
	}
	if len(ps) != 1 {
		t.Fatalf("got %d processes, want 1", len(ps))
	}
	return ps[0]
}

func parseErr(t *testing.T, xml string) error {
	t.Helper()
	ps, err := Parse(strings.NewReader(xml))
	if err == nil {
		t.Fatalf("Parse succeeded with %d processes, want an error\n%s", len(ps), xml)
	}
	if ps != nil {
		t.Errorf("Parse returned processes with an error")
	}
	return err
}

// lineOf returns the line of the first occurrence of marker in s.
func lineOf(t *testing.T, s, marker string) int {
	t.Helper()
	i := strings.Index(s, marker)
	if i < 0 {
		t.Fatalf("marker %q not in document", marker)
	}
	return strings.Count(s[:i], "\n") + 1
}

// importError returns the first *Error in err.
func importError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v has no *bpmnxml.Error", err)
	}
	return e
}

func node(t *testing.T, p *model.Process, id string) *model.Node {
	t.Helper()
	n := p.Node(id)
	if n == nil {
		t.Fatalf("no node %q", id)
	}
	return n
}
