package bpmnxml

import (
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// HTTPConnectorTopic is the job topic of Camunda 7's http-connector: a
// service task with <camunda:connector> connectorId http-connector is a
// job on it, which `jetbpm serve --connectors http` runs
// (docs/scripts-listeners-connectors.md §3.2).
const HTTPConnectorTopic = "jetbpm:http-connector"

// camundaConnector reads a Camunda 7 <camunda:connector> on a service
// task, a send task or a message throw event into a job on
// HTTPConnectorTopic:
//
//	<camunda:connector>
//	  <camunda:connectorId>http-connector</camunda:connectorId>
//	  <camunda:inputOutput>
//	    <camunda:inputParameter name="url">https://api.example.com/orders</camunda:inputParameter>
//	    <camunda:inputParameter name="method">POST</camunda:inputParameter>
//	    <camunda:inputParameter name="headers"><camunda:map>...</camunda:map></camunda:inputParameter>
//	    <camunda:inputParameter name="payload">${order}</camunda:inputParameter>
//	    <camunda:outputParameter name="status">${statusCode}</camunda:outputParameter>
//	  </camunda:inputOutput>
//	</camunda:connector>
//
// The connector's input parameters are evaluated after the activity's
// own, so they may read them, and become the job's input; its output
// parameters are evaluated before the activity's own, over the job's
// results (response, statusCode, headers) and the variables. The results
// are the task's alone: without output parameters nothing is written, as
// in Camunda 7. Other connector ids are refused by name.
func (im *importer) camundaConnector(e *elem, n *model.Node, c *elem) {
	var id string
	var ins, outs []model.Mapping
	for _, ch := range c.children {
		switch {
		case ch.is(NamespaceCamunda, "connectorId"):
			id = strings.TrimSpace(ch.text)
		case ch.is(NamespaceCamunda, "inputOutput"):
			ins, outs = im.camundaInputOutput(e, ch)
		case ch.name.Space == NamespaceCamunda:
			im.probs.in(e, ch, "not supported inside camunda:connector")
		}
	}
	switch id {
	case "http-connector":
	case "":
		im.probs.in(e, c, "has no camunda:connectorId")
		return
	default:
		im.probs.in(e, c, "connectorId %q is not supported (only http-connector; write a worker for the rest)", id)
		return
	}
	if s := n.Service; s != nil && (s.Worker != nil || s.Operation != "") {
		im.probs.in(e, c, "the %s also runs a job (%s); keep one", n.Kind, jobName(s))
		return
	}
	if n.Service == nil {
		n.Service = &model.Service{}
	}
	n.Service.Worker = &model.Worker{Topic: HTTPConnectorTopic, ResultsLocal: true}
	n.Inputs = append(n.Inputs, ins...)
	n.Outputs = append(outs, n.Outputs...)
}

// camundaInputOutput reads the parameters of a camunda:inputOutput.
func (im *importer) camundaInputOutput(owner, c *elem) (ins, outs []model.Mapping) {
	for _, p := range c.children {
		if p.name.Space != NamespaceCamunda {
			continue
		}
		src, lang, sets, ok := im.camundaParam(owner, p)
		if !ok {
			continue
		}
		mp := model.Mapping{Target: strings.TrimSpace(p.attr("", "name")), Source: src, Language: lang}
		switch p.name.Local {
		case "inputParameter":
			ins = append(append(ins, mp), sets...)
		case "outputParameter":
			outs = append(append(outs, mp), sets...)
		}
	}
	return ins, outs
}

// camundaCollection translates a camunda:list or camunda:map value into
// the expression that builds it: a list of its camunda:value elements, a
// context of its camunda:entry elements by key, each a constant, an
// expression (${...}) or a nested list or map.
func (im *importer) camundaCollection(owner, v *elem) (string, bool) {
	var parts []string
	ok := true
	for _, ch := range v.children {
		want := "value"
		if v.name.Local == "map" {
			want = "entry"
		}
		if !ch.is(NamespaceCamunda, want) {
			im.probs.in(owner, ch, "not supported inside camunda:%s (camunda:%s only)", v.name.Local, want)
			ok = false
			continue
		}
		src, good := im.camundaItem(owner, ch)
		if !good {
			ok = false
			continue
		}
		if want == "entry" {
			key, has := ch.lookup("", "key")
			if !has {
				im.probs.in(owner, ch, "has no key")
				ok = false
				continue
			}
			src = strconv.Quote(key) + ": " + src
		}
		parts = append(parts, src)
	}
	if v.name.Local == "map" {
		return "{" + strings.Join(parts, ", ") + "}", ok
	}
	return "[" + strings.Join(parts, ", ") + "]", ok
}

// camundaItem is the expression of a list's value or a map's entry.
func (im *importer) camundaItem(owner, ch *elem) (string, bool) {
	switch {
	case len(ch.children) > 1:
		im.probs.in(owner, ch, "has one value")
		return "", false
	case len(ch.children) == 1:
		v := ch.children[0]
		if v.is(NamespaceCamunda, "list") || v.is(NamespaceCamunda, "map") {
			return im.camundaCollection(owner, v)
		}
		im.probs.in(owner, v, "not supported inside camunda:%s (a constant, an expression, a list or a map)", ch.name.Local)
		return "", false
	}
	text := strings.TrimSpace(ch.text)
	switch {
	case text == "":
		return "nil", true
	case strings.Contains(text, "${") || strings.Contains(text, "#{"):
		src, _, err := juelText(text)
		if err == nil {
			src, err = expression.Translate(src) // into the collection's expr-lang
		}
		if err != nil {
			im.probs.in(owner, ch, "%v", err)
			return "", false
		}
		return "(" + src + ")", true
	}
	return expression.Literal(text), true
}
