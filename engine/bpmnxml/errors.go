package bpmnxml

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one import problem: an element jetbpm cannot execute, an
// extension it refuses, or a document that is not well-formed BPMN. It reads
// on one line, e.g.
//
//	line 42: <bpmn:businessRuleTask id="score">: business rule tasks are not supported
//
// Element is the tag with a canonical prefix (bpmn:, camunda:, zeebe:,
// jetbpm:) whatever prefix the document used; ID is the element's id
// attribute when it has one. Problems found after import, by
// model.Process.Validate, are *model.Error values and carry the line too.
type Error struct {
	Line    int
	Element string
	ID      string
	Msg     string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Element != "" {
		b.WriteString("<" + e.Element)
		if e.ID != "" {
			fmt.Fprintf(&b, " id=%q", e.ID)
		}
		b.WriteString(">: ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxProblems bounds the problems one Parse reports.
const maxProblems = 20

// problems collects import errors up to maxProblems.
type problems struct {
	errs      []error
	truncated bool
}

func (p *problems) add(err error) {
	if len(p.errs) == maxProblems {
		p.truncated = true
		return
	}
	p.errs = append(p.errs, err)
}

// at records a problem about element e.
func (p *problems) at(e *elem, format string, args ...any) {
	p.add(&Error{Line: e.line, Element: e.tag(), ID: e.attr("", "id"), Msg: fmt.Sprintf(format, args...)})
}

// in records a problem about child, an extension or sub-element of owner:
// the line is the child's, the element named is the owner.
func (p *problems) in(owner, child *elem, format string, args ...any) {
	p.add(&Error{Line: child.line, Element: owner.tag(), ID: owner.attr("", "id"),
		Msg: child.tag() + ": " + fmt.Sprintf(format, args...)})
}

func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	errs := p.errs
	if p.truncated {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("too many problems; stopped after %d", maxProblems))
	}
	return errors.Join(errs...)
}

// fileError prefixes every line of an import error with the file name.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	lines := strings.Split(e.err.Error(), "\n")
	for i, l := range lines {
		lines[i] = e.path + ": " + l
	}
	return strings.Join(lines, "\n")
}

func (e *fileError) Unwrap() error { return e.err }
