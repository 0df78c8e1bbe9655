package engine

import (
	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/engine/model"
)

// Problem is one reason a deploy was refused, as a tool shows it: the
// file (a Resource's name), the line, the element's id and what is wrong.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Element string `json:"element,omitempty"`
	Message string `json:"message"`
}

// Problems lists every import and validation problem err holds (an error
// of DeployXML, DeployResources or DeployAll), in order; none for other
// errors.
func Problems(err error) []Problem {
	var out []Problem
	var walk func(err error, file string)
	walk = func(err error, file string) {
		var re *resourceError
		var ie *bpmnxml.Error
		var me *model.Error
		switch {
		case err == nil:
		case asDirect(err, &re):
			walk(re.err, re.name)
		case asDirect(err, &ie):
			out = append(out, Problem{File: file, Line: ie.Line, Element: ie.ID, Message: ie.Error()})
		case asDirect(err, &me):
			out = append(out, Problem{File: file, Line: me.Line, Element: me.Element, Message: me.Error()})
		default:
			switch u := err.(type) {
			case interface{ Unwrap() []error }:
				for _, e := range u.Unwrap() {
					walk(e, file)
				}
			case interface{ Unwrap() error }:
				walk(u.Unwrap(), file)
			}
		}
	}
	walk(err, "")
	return out
}

// asDirect is errors.As for err itself, not what it wraps.
func asDirect[T error](err error, target *T) bool {
	t, ok := err.(T)
	if ok {
		*target = t
	}
	return ok
}

// resourceError is a problem with one named document of a deploy.
type resourceError struct {
	name string
	err  error
}

func (e *resourceError) Error() string { return e.name + ": " + e.err.Error() }
func (e *resourceError) Unwrap() error { return e.err }
