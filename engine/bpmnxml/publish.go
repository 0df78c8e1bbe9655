package bpmnxml

import (
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// A message throw (send task, message intermediate throw or end event)
// sends its message in one of two ways:
//
//   - a job, configured as a service task's: Zeebe's zeebe:taskDefinition
//     (with zeebe:taskHeaders), Camunda 7's camunda:type="external"
//     camunda:topic (on a send task, or on a throw event's
//     messageEventDefinition), jetbpm:worker topic, and the jetbpm job
//     options; or in process: jetbpm:operation, camunda:class,
//     camunda:delegateExpression, camunda:expression;
//   - a declarative publish by the engine itself:
//
//	<jetbpm:publish correlationKey="=orderId" timeToLive="PT1H" messageId="=paymentId">
//	  <jetbpm:variable name="amount" source="=total"/>
//	  <jetbpm:variable name="currency"/>
//	</jetbpm:publish>

// throw reads how message throw n sends its message.
func (im *importer) throw(e *elem, n *model.Node, x *nodeExt) {
	im.zeebeWorker(e, n, x)
	im.jetbpmWorker(e, n, x)
	im.taskHeaders(e, n, x)
	if x.connector != nil {
		im.camundaConnector(e, n, x.connector)
	}
	s := n.Service
	job := s.Operation != "" || s.Worker != nil
	if c := x.jetbpm["publish"]; c != nil {
		if job {
			im.probs.in(e, c, "the %s also runs a job (%s); a message throw either runs a job or publishes its message, choose one", n.Kind, jobName(s))
			return
		}
		im.publish(e, c, n, x)
	}
	if !job {
		if s.Timeout != 0 {
			im.probs.at(e, "jetbpm:timeout bounds an in-process operation, and this %s runs none", n.Kind)
		}
		n.Service = nil
	}
}

// jobName says what makes s a job, for errors.
func jobName(s *model.Service) string {
	if s.Worker != nil {
		return "worker topic " + s.Worker.Topic + s.Worker.TopicExpr
	}
	return "in-process operation " + s.Operation
}

// publish reads <jetbpm:publish> c of message throw e into n.Publish. Its
// attributes and each variable's source are expressions in any dialect
// (=FEEL, ${JUEL}, expr-lang otherwise), like jetbpm's other expressions.
func (im *importer) publish(e, c *elem, n *model.Node, x *nodeExt) {
	a, ok := im.jetbpmAttrs(e, c, "correlationKey", "timeToLive", "messageId")
	if !ok {
		return
	}
	if n.Message == nil {
		if ref := x.messageRefHolder(e); strings.TrimSpace(ref.attr("", "messageRef")) == "" {
			im.probs.in(e, c, "publishes the element's message, and it names none: add messageRef")
		}
		return // else: the messageRef's problem is reported
	}
	pub := &model.Publish{}
	for _, f := range []struct {
		attr string
		dst  *string
	}{{"correlationKey", &pub.CorrelationKey}, {"messageId", &pub.MessageID}} {
		v, has := a[f.attr]
		if !has {
			continue
		}
		if *f.dst = strings.TrimSpace(v); *f.dst == "" {
			im.probs.in(e, c, "%s is empty", f.attr)
			ok = false
		} else if _, err := expression.Compile(*f.dst); err != nil {
			im.probs.in(e, c, "%s=%q: %v", f.attr, v, err)
			ok = false
		}
	}
	if v, has := a["timeToLive"]; has {
		d, msg := clockDuration(v)
		if msg != "" {
			im.probs.in(e, c, "timeToLive=%q: %s", v, msg)
			ok = false
		}
		pub.TTL = d
	}
	seen := map[string]bool{}
	for _, v := range c.children {
		if !v.is(Namespace, "variable") {
			im.probs.in(e, v, "not supported inside jetbpm:publish (only jetbpm:variable)")
			ok = false
			continue
		}
		va, vok := im.jetbpmAttrs(e, v, "name", "source")
		if !vok {
			ok = false
			continue
		}
		im.noChildren(e, v)
		name := strings.TrimSpace(va["name"])
		src, hasSrc := va["source"]
		src = strings.TrimSpace(src)
		switch {
		case !isIdentifier(name):
			im.probs.in(e, v, "name=%q is not a variable name", va["name"])
			ok = false
			continue
		case seen[name]:
			im.probs.in(e, v, "variable %q is published twice", name)
			ok = false
			continue
		case !hasSrc:
			src = name // the variable of that name
		case src == "":
			im.probs.in(e, v, "variable %q: source is empty (omit it to publish the variable %q)", name, name)
			ok = false
			continue
		}
		seen[name] = true
		if _, err := expression.Compile(src); err != nil {
			im.probs.in(e, v, "variable %q: source=%q: %v", name, src, err)
			ok = false
			continue
		}
		pub.Variables = append(pub.Variables, model.Mapping{Target: name, Source: src})
	}
	if ok {
		n.Publish = pub
	}
}

// messageRefHolder is the element that carries e's messageRef: a throw
// event's messageEventDefinition, else e itself.
func (x *nodeExt) messageRefHolder(e *elem) *elem {
	if x.definition != nil {
		return x.definition
	}
	return e
}
