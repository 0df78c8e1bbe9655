package model

import (
	"fmt"

	"github.com/jetbpm/jetbpm/expression"
)

// Loop makes an activity multi-instance: it runs once per item of
// Collection (or Cardinality times), in parallel or one after another.
// Each iteration has its own scope with loopCounter (1-based) and, for a
// collection, ElementVariable bound to its item; OutputElement, evaluated
// in the iteration's scope when it completes, fills OutputCollection in
// order. CompletionCondition, checked after each iteration, ends the loop
// early (the others are cancelled).
type Loop struct {
	Sequential          bool   `msgpack:"sequential,omitempty"`
	Collection          string `msgpack:"collection,omitempty"`
	ElementVariable     string `msgpack:"element,omitempty"`
	Cardinality         string `msgpack:"cardinality,omitempty"`
	OutputCollection    string `msgpack:"outputCollection,omitempty"`
	OutputElement       string `msgpack:"outputElement,omitempty"`
	CompletionCondition string `msgpack:"completion,omitempty"`

	collection, cardinality, outputElement, completion *expression.Expression
}

// Compiled expressions, nil when not set.
func (l *Loop) CollectionExpr() *expression.Expression  { return l.collection }
func (l *Loop) CardinalityExpr() *expression.Expression { return l.cardinality }
func (l *Loop) OutputElementExpr() *expression.Expression {
	return l.outputElement
}
func (l *Loop) CompletionExpr() *expression.Expression { return l.completion }

// WithLoop makes an activity multi-instance.
func WithLoop(l Loop) NodeOption { return func(n *Node) { n.Loop = &l } }

func (v *validator) loop(n *Node) {
	l := n.Loop
	if !n.Kind.IsActivity() {
		v.nodef(n, "only activities can be multi-instance")
		return
	}
	if (l.Collection == "") == (l.Cardinality == "") {
		v.nodef(n, "multi-instance needs either a collection or a cardinality")
	}
	for _, name := range []string{l.ElementVariable, l.OutputCollection} {
		if name != "" && !validVariable(name) {
			v.nodef(n, "multi-instance variable %q is not a variable name", name)
		}
	}
	if (l.OutputElement == "") != (l.OutputCollection == "") {
		v.nodef(n, "multi-instance output needs both an output collection and an output element")
	}
	compile := func(what, src string) *expression.Expression {
		if src == "" {
			return nil
		}
		return v.compile(n, fmt.Sprintf("multi-instance %s", what), src)
	}
	l.collection = compile("collection", l.Collection)
	l.cardinality = compile("cardinality", l.Cardinality)
	l.outputElement = compile("output element", l.OutputElement)
	l.completion = compile("completion condition", l.CompletionCondition)
}
