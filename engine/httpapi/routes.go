package httpapi

import (
	"net/http"
	"reflect"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// A route maps one method and path onto one engine API operation. The
// operation's request is built from the path's wildcards (path), the
// query string (GET) or a JSON body (in), and fixed fields.
type route struct {
	method, path string // path is a net/http pattern path: /v1/instances/{id}
	op           string
	access       httpauth.Access
	summary      string
	// in is the operation's request type: the body's JSON object or, for
	// GET, the query parameters are its fields (less the path's).
	in reflect.Type
	// out is the result's type, for the OpenAPI document.
	out reflect.Type
	// path maps each wildcard onto its request field.
	pathFields map[string]string
	// fixed fields are set on every request of the route.
	fixed map[string]any
	// status is the success status; 0 is 200.
	status int
	// serve, when set, answers instead of the generic JSON path (deploy's
	// multipart and raw XML bodies, a process's XML).
	serve func(s *Server, w http.ResponseWriter, r *http.Request, rt *route)
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// idField maps the wildcard {id} onto the request's id.
var idField = map[string]string{"id": "id"}

// routes is the /v1 route table: the handlers, the OpenAPI document and
// docs/http-api.md are all made from (or checked against) it.
func routes() []*route {
	incident := func(op, verb, summary string, in reflect.Type) *route {
		return &route{method: "POST", path: "/v1/incidents/{id}/" + verb, op: op, access: httpauth.Operate, summary: summary,
			in: in, out: typeOf[engine.IncidentView](), pathFields: idField}
	}
	task := func(verb, op, summary string, access httpauth.Access) *route {
		return &route{method: "POST", path: "/v1/tasks/{id}/" + verb, op: op, access: access, summary: summary,
			in: typeOf[api.TaskRequest](), out: typeOf[instance.Task](), pathFields: idField}
	}
	return []*route{
		{method: "POST", path: "/v1/deployments", op: api.OpDeploy, access: httpauth.Operate,
			summary: "Deploy BPMN documents, all or none: multipart/form-data files, a raw XML body (?name=) or JSON {files:[{name,xml}]}",
			in:      typeOf[api.DeployRequest](), out: typeOf[api.DeployResponse](), serve: (*Server).serveDeploy},
		{method: "GET", path: "/v1/processes", op: api.OpProcessList, access: httpauth.Read,
			summary: "List the latest version of every deployed process", in: typeOf[struct{}](), out: typeOf[api.ProcessListResponse]()},
		{method: "GET", path: "/v1/processes/{id}", op: api.OpProcessGet, access: httpauth.Read,
			summary: "Describe a deployed process version (?version=, ?xml=true for its BPMN document)",
			in:      typeOf[api.ProcessRequest](), out: typeOf[api.ProcessResponse](), pathFields: idField},
		{method: "GET", path: "/v1/processes/{id}/xml", op: api.OpProcessGet, access: httpauth.Read,
			summary: "The BPMN document a process version was deployed from (application/xml)",
			in:      typeOf[api.ProcessRequest](), pathFields: idField, fixed: map[string]any{"xml": true}, serve: (*Server).serveXML},
		{method: "GET", path: "/v1/processes/{id}/diagram", op: api.OpProcessGet, access: httpauth.Read,
			summary: "A BPMN document to draw the process version with (application/xml): its own when it has diagram interchange, else one laid out from the process (header X-Jetbpm-Laid-Out: true)",
			in:      typeOf[api.ProcessRequest](), pathFields: idField, fixed: map[string]any{"diagram": true}, serve: (*Server).serveXML},
		{method: "POST", path: "/v1/processes/{id}/instances", op: api.OpStart, access: httpauth.Operate,
			summary: "Start an instance of the process", status: http.StatusCreated,
			in: typeOf[api.StartRequest](), out: typeOf[api.StartResponse](), pathFields: map[string]string{"id": "processId"}},
		{method: "GET", path: "/v1/instances", op: api.OpInstanceList, access: httpauth.Read,
			summary: "List instances, newest first", in: typeOf[api.ListRequest](), out: typeOf[api.ListResponse]()},
		{method: "GET", path: "/v1/instances/{id}", op: api.OpInstanceGet, access: httpauth.Read,
			summary: "Read an instance", in: typeOf[struct{}](), out: typeOf[engine.InstanceView](), pathFields: idField},
		{method: "POST", path: "/v1/instances/{id}/cancel", op: api.OpInstanceCancel, access: httpauth.Operate,
			summary: "Terminate an active instance and wait until it has stopped",
			in:      typeOf[api.InstanceRequest](), out: typeOf[engine.InstanceView](), pathFields: idField},
		{method: "POST", path: "/v1/instances/{id}/compensate", op: api.OpInstanceCompensate, access: httpauth.Operate,
			summary: "Start compensating the instance: its journal's handlers (or one node's) run newest first, then it ends terminated",
			in:      typeOf[api.CompensateRequest](), out: typeOf[engine.InstanceView](), pathFields: idField,
			status: http.StatusAccepted},
		{method: "POST", path: "/v1/instances/{id}/variables", op: api.OpInstanceSetVars, access: httpauth.Operate,
			summary: "Write vars to the active instance's process-level scope and answer with the instance after the write",
			in:      typeOf[api.SetVarsRequest](), out: typeOf[engine.InstanceView](), pathFields: idField},
		{method: "POST", path: "/v1/instances/{id}/trigger", op: api.OpInstanceTrigger, access: httpauth.Operate,
			summary: "Move on the token waiting at a receive task without a message (node names it; vars are its results) and answer with the instance after the step",
			in:      typeOf[api.TriggerRequest](), out: typeOf[engine.InstanceView](), pathFields: idField},
		{method: "GET", path: "/v1/incidents", op: api.OpIncidentList, access: httpauth.Read,
			summary: "List incidents, oldest first failure first", in: typeOf[api.IncidentListRequest](), out: typeOf[api.IncidentListResponse]()},
		{method: "GET", path: "/v1/incidents/{id}", op: api.OpIncidentGet, access: httpauth.Read,
			summary: "Read an incident (its id holds '/': send it as %2F)", in: typeOf[struct{}](), out: typeOf[engine.IncidentView](), pathFields: idField},
		incident(api.OpIncidentRetry, "retry", "Re-enter the incident's node now", typeOf[struct{}]()),
		incident(api.OpIncidentResolve, "resolve", "Set vars, then continue as if the node had completed", typeOf[resolveBody]()),
		incident(api.OpIncidentAbandon, "abandon", "Close the incident as dead-lettered and cancel its token", typeOf[struct{}]()),
		{method: "POST", path: "/v1/messages", op: api.OpMessagePublish, access: httpauth.Integrate,
			summary: "Publish a message (kept for later subscriptions with ttl)", in: typeOf[api.MessageRequest](), out: typeOf[api.MessagePublishResponse]()},
		{method: "POST", path: "/v1/messages/correlate", op: api.OpMessageCorrelate, access: httpauth.Integrate,
			summary: "Deliver a message to one waiting instance and name it", in: typeOf[api.MessageRequest](), out: typeOf[api.MessageCorrelateResponse]()},
		{method: "POST", path: "/v1/signals", op: api.OpSignalBroadcast, access: httpauth.Integrate,
			summary: "Broadcast a signal", in: typeOf[api.SignalRequest](), out: typeOf[api.SignalResponse]()},
		{method: "GET", path: "/v1/tasks", op: api.OpTaskList, access: httpauth.TaskRead,
			summary: "List user tasks, highest priority then oldest first", in: typeOf[api.TaskListRequest](), out: typeOf[api.TaskListResponse]()},
		{method: "GET", path: "/v1/tasks/{id}", op: api.OpTaskGet, access: httpauth.TaskRead,
			summary: "Read a user task", in: typeOf[struct{}](), out: typeOf[instance.Task](), pathFields: idField},
		{method: "GET", path: "/v1/tasks/{id}/form", op: api.OpTaskForm, access: httpauth.TaskRead,
			summary: "The task's form from its BPMN file, a Camunda Forms (form-js) schema; not_found when the form is not in the file",
			in:      typeOf[struct{}](), out: typeOf[api.TaskFormResponse](), pathFields: idField},
		task("claim", api.OpTaskClaim, "Assign the task to user; another user's claim is a conflict", httpauth.TaskWork),
		task("unclaim", api.OpTaskUnclaim, "Give the task back", httpauth.TaskWork),
		task("assign", api.OpTaskAssign, "Assign the task to user, whoever holds it", httpauth.TaskWork),
		task("update", api.OpTaskUpdate, "Change the due date, follow-up date or priority", httpauth.TaskWork),
		task("complete", api.OpTaskComplete, "Complete the task with vars", httpauth.TaskWork),
		task("error", api.OpTaskError, "End the task with a BPMN error", httpauth.TaskWork),
		task("escalate", api.OpTaskEscalate, "Raise an escalation from the task, caught by its escalation boundary or an enclosing scope", httpauth.TaskWork),
		{method: "GET", path: "/v1/store/damage", op: api.OpStoreRecords, access: httpauth.Read,
			summary: "List the store's damage records (docs/reliability.md, \"A damaged store\"); open counts those an operator has to act on",
			in:      typeOf[struct{}](), out: typeOf[api.StoreCheckResponse]()},
		{method: "GET", path: "/v1/cluster", op: api.OpClusterStatus, access: httpauth.Read,
			summary: "The engine nodes, the partitions each holds and each partition's backlog (docs/engine.md §6.1)",
			in:      typeOf[struct{}](), out: typeOf[engine.ClusterView]()},
		{method: "POST", path: "/v1/store/check", op: api.OpStoreCheck, access: httpauth.Operate,
			summary: "Check the store for damage now, record what is found and list the damage records",
			in:      typeOf[struct{}](), out: typeOf[api.StoreCheckResponse]()},
		{method: "POST", path: "/v1/store/damage/{key}/dismiss", op: api.OpStoreDismiss, access: httpauth.Operate,
			summary: "Close an open damage record, accepting its loss with a reason",
			in:      typeOf[lostReason](), out: typeOf[api.StoreCheckResponse](), pathFields: keyField},
		{method: "POST", path: "/v1/store/damage/{key}/recreate", op: api.OpStoreRecreate, access: httpauth.Operate,
			summary: "Start a new instance, <id>-recreated, in place of a lost one from its start event with the variables its traces held, and close the record",
			in:      typeOf[struct{}](), out: typeOf[api.RecreateResponse](), pathFields: keyField},
	}
}

// keyField maps the wildcard {key} onto a damage record's key.
var keyField = map[string]string{"key": "key"}

// lostReason is the body of a damage record's dismissal.
type lostReason struct {
	Reason string `json:"reason"`
}

// resolveBody is the body of incident resolve.
type resolveBody struct {
	Vars map[string]any `json:"vars,omitempty"`
}
