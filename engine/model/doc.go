// Package model defines jetbpm's process model: the nodes, sequence flows and
// options of a BPMN process, a Builder that constructs one in Go, and the
// validation every process passes before it can be deployed.
//
// A Process is plain data. It holds no Go closures, so it can be stored in
// JetStream and loaded by any engine node: an in-process service task names
// its operation (see Node.Service), and the engine resolves the name to the
// function registered under it when the task runs. Expressions (conditions,
// scripts, mappings) are kept as source text in one of the dialects package
// expression accepts and compiled once by Validate.
//
// Build a process with NewBuilder:
//
//	b := model.NewBuilder("order")
//	b.StartEvent("start")
//	b.ServiceTask("charge", "payments.charge", model.Timeout(5*time.Second))
//	b.ExclusiveGateway("big?")
//	b.Task("review")
//	b.EndEvent("end")
//	b.Sequence("start", "charge", "big?")
//	b.Flow("big?", "review", model.When("amount > 1000"))
//	b.DefaultFlow("big?", "end")
//	b.Flow("review", "end")
//	p, err := b.Build()
//
// or import BPMN 2.0 XML with package bpmnxml. Either way the result is
// validated: errors name the element (and the XML line when there is one).
package model
