package camunda7

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// AuthorizePrincipal is an Options.Authorize for a Handler mounted behind
// jetbpm's HTTP authentication (httpapi.Server.HandleEngine): it checks
// the caller httpauth.FromContext finds against the roles. A worker
// credential may fetch and report the external tasks of its topics only,
// and read them; it may not deploy, start or read anything else.
func AuthorizePrincipal(r *http.Request, a Access) error {
	p := httpauth.FromContext(r.Context())
	var need httpauth.Access
	switch a.Operation {
	case OpFetch, OpReport:
		need = httpauth.Work
	case OpExternalTaskRead:
		need = httpauth.Read
		if p.Allows(httpauth.Work) && len(a.Topics) > 0 {
			need = httpauth.Work // a worker reads the tasks of its topics
		}
	case OpDeploy, OpStart, OpCancel, OpModify, OpSignal:
		need = httpauth.Operate
	case OpRead:
		need = httpauth.Read
	case OpMessage:
		need = httpauth.Integrate
	case OpTaskRead:
		need = httpauth.TaskRead
	case OpTaskWork:
		need = httpauth.TaskWork
	default:
		return fmt.Errorf("unknown operation %q", a.Operation)
	}
	name := "the caller"
	if p != nil {
		name = p.Name
	}
	if !p.Allows(need) {
		return fmt.Errorf("%s may not %s: it needs one of the roles %s", name, a.Operation, roles(httpauth.RolesFor(need)))
	}
	if need == httpauth.Work {
		for _, t := range a.Topics {
			if !p.MayWork(t) {
				return fmt.Errorf("%s may not work the external tasks of topic %q", name, t)
			}
		}
	}
	return nil
}

func roles(rs []httpauth.Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// Deny answers a request the HTTP authentication refused (401, 403) or
// one that came while the engine is not running (503) with a Camunda 7
// error body; for httpapi.DenyWith.
func Deny(w http.ResponseWriter, r *http.Request, status int, detail string) {
	typ := "ProcessEngineException"
	switch status {
	case http.StatusUnauthorized:
		typ = "AuthenticationException"
	case http.StatusForbidden:
		typ = "AuthorizationException"
	}
	writeError(w, status, typ, detail)
}
