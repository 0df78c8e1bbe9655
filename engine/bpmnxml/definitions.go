package bpmnxml

import (
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
)

// importer turns an element tree into processes, collecting problems.
type importer struct {
	// resources are the deployment's other files (ParseIn).
	resources    Resources
	probs        problems
	errors       map[string]*elem // <error> declarations by id
	messages     map[string]*elem // <message> declarations by id
	messageDecls map[string]*messageDecl
	signals      map[string]*elem // <signal> declarations by id (signal.go)
	// zeebeModel says the document is written for Zeebe (zeebeDialect).
	zeebeModel bool
	// camunda7 says the document is written for Camunda 7
	// (camunda7Dialect): its cron timer cycles are Quartz's.
	camunda7 bool
	// escalations are the <escalation> declarations by id; eventSubs the
	// event sub-processes imported so far, by id (eventsubprocess.go).
	escalations map[string]*elem
	eventSubs   map[string]*model.Node
	// assocs are the associations read so far, both ends by id
	// (compensation.go).
	assocs map[string][]string
	// userTaskForms are the file's zeebe:userTaskForm elements by id
	// (forms.go).
	userTaskForms map[string]*elem
	// proc is the process being imported; warn adds to its Warnings.
	proc *model.Process
	// listeners is where the execution listeners of the process's or a
	// sequence flow's extensionElements go, while they are read.
	listeners listenerDst
}

// warn records that element e deploys but does not run as written.
func (im *importer) warn(e *elem, format string, args ...any) {
	im.proc.Warnings = append(im.proc.Warnings, model.Warning{Node: e.attr("", "id"), Line: e.line, Message: fmt.Sprintf(format, args...)})
}

// warnIn is warn about child, part of element owner: the line is the
// child's, the element named is the owner.
func (im *importer) warnIn(owner, child *elem, format string, args ...any) {
	im.proc.Warnings = append(im.proc.Warnings, model.Warning{Node: owner.attr("", "id"), Line: child.line,
		Message: child.tag() + ": " + fmt.Sprintf(format, args...)})
}

// declarations are definitions-level elements that only matter when an
// element refers to them: <error> and <message> are read then, and the
// elements referring to the others are refused, so those are ignored.
var declarations = set("message", "signal", "escalation", "itemDefinition", "resource",
	"dataStore", "category", "interface", "import", "extension", "documentation",
	"extensionElements", "correlationProperty", "partnerEntity", "partnerRole", "endPoint",
	"relationship", "globalTask", "globalUserTask", "globalManualTask", "globalScriptTask",
	"globalBusinessRuleTask", "globalConversation", "choreography",
	"timerEventDefinition", "errorEventDefinition", "messageEventDefinition",
	"signalEventDefinition", "escalationEventDefinition", "conditionalEventDefinition",
	"compensateEventDefinition", "cancelEventDefinition", "linkEventDefinition",
	"terminateEventDefinition")

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func importDefinitions(root *elem, resources Resources) ([]*model.Process, error) {
	if !root.is(NamespaceBPMN, "definitions") {
		return nil, &Error{Line: root.line, Element: root.tag(),
			Msg: "not a BPMN 2.0 document: the root element must be <definitions> in namespace " + NamespaceBPMN}
	}
	assignIDs(root)
	im := &importer{errors: map[string]*elem{}, messages: map[string]*elem{}, signals: map[string]*elem{},
		messageDecls: map[string]*messageDecl{}, zeebeModel: zeebeDialect(root), camunda7: camunda7Dialect(root),
		escalations: map[string]*elem{}, eventSubs: map[string]*model.Node{}, userTaskForms: userTaskForms(root),
		resources: resources}
	for _, c := range root.children {
		switch {
		case c.is(NamespaceBPMN, "error"):
			im.errors[c.attr("", "id")] = c
		case c.is(NamespaceBPMN, "message"):
			im.messages[c.attr("", "id")] = c
		case c.is(NamespaceBPMN, "escalation"):
			im.escalations[c.attr("", "id")] = c
		case c.is(NamespaceBPMN, "signal"):
			im.signals[c.attr("", "id")] = c
		}
	}
	var procs []*model.Process
	ids := map[string]bool{}
	declared := 0
	for _, c := range root.children {
		if c.name.Space != NamespaceBPMN {
			continue // another tool's metadata
		}
		switch local := c.name.Local; {
		case local == "process":
			declared++
			exec, ok := boolAttr(c, "isExecutable", true)
			if !ok {
				im.probs.at(c, "isExecutable=%q is not a boolean", c.attr("", "isExecutable"))
			}
			if !exec {
				continue
			}
			p := &model.Process{ID: c.attr("", "id"), Name: c.attr("", "name"),
				HistoryTimeToLive: strings.TrimSpace(c.attr(NamespaceCamunda, "historyTimeToLive"))}
			if ids[p.ID] {
				im.probs.at(c, "process id %q is used twice", p.ID)
			}
			ids[p.ID] = true
			im.noJetbpmAttrs(c)
			im.proc = p
			im.flowElements(p, c, nil)
			im.compensationHandlers(p)
			procs = append(procs, p)
		case local == "collaboration":
			// Participants' processes are imported as top-level processes;
			// the rest is descriptive. Message flows too: as in Zeebe and
			// Camunda 7, a message reaches a catch by its name and
			// correlation key, not along a message flow.
		case local == "error" || declarations[local]:
		default:
			im.probs.at(c, "%s elements are not supported", local)
		}
	}
	if len(procs) == 0 {
		// With nothing to execute, other problems (e.g. in descriptive
		// pools) are beside the point.
		msg := "the document has no executable process (every <process> has isExecutable=\"false\")"
		if declared == 0 {
			msg = "the document has no <process>"
		}
		return nil, &Error{Line: root.line, Element: root.tag(), ID: root.attr("", "id"), Msg: msg}
	}
	if err := im.probs.err(); err != nil {
		return nil, err
	}
	// Validation runs only on a complete import: a refused element would
	// otherwise show up again as dangling flows.
	for _, p := range procs {
		p.Warnings = append(p.Warnings, ignoreDefaultConditions(p)...)
		if err := p.Validate(); err != nil {
			for _, e := range flatten(err) {
				im.probs.add(e)
			}
		}
	}
	if err := im.probs.err(); err != nil {
		return nil, err
	}
	return procs, nil
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// boolAttr reads an xs:boolean attribute, def when absent.
func boolAttr(e *elem, name string, def bool) (value, ok bool) {
	v, present := e.lookup("", name)
	if !present {
		return def, true
	}
	switch v {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	return def, false
}
