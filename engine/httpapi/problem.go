package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/streams"
)

// Problem is an error answer, RFC 9457 problem details
// (application/problem+json). Type is stable per class of error (the
// ProblemTypes); Code is the engine API's error code when the engine
// refused the request (docs/api.md §2).
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	Code     string `json:"code,omitempty"`
}

// problemBase prefixes every problem type.
const problemBase = "urn:jetbpm:problem:"

// A problemClass is one stable problem type.
type problemClass struct {
	name   string
	status int
	title  string
}

// The problem classes; their types are problemBase + name.
var (
	badRequest     = problemClass{"bad-request", http.StatusBadRequest, "Bad request"}
	unauthorized   = problemClass{"unauthenticated", http.StatusUnauthorized, "Unauthenticated"}
	forbidden      = problemClass{"forbidden", http.StatusForbidden, "Forbidden"}
	notFound       = problemClass{"not-found", http.StatusNotFound, "Not found"}
	noSubscription = problemClass{"no-subscription", http.StatusNotFound, "No subscription"}
	methodNotAllow = problemClass{"method-not-allowed", http.StatusMethodNotAllowed, "Method not allowed"}
	conflict       = problemClass{"conflict", http.StatusConflict, "Conflict"}
	finished       = problemClass{"finished", http.StatusConflict, "Finished"}
	duplicate      = problemClass{"duplicate", http.StatusConflict, "Duplicate"}
	tooLarge       = problemClass{"too-large", http.StatusRequestEntityTooLarge, "Content too large"}
	unprocessable  = problemClass{"unprocessable", http.StatusUnprocessableEntity, "Unprocessable"}
	internalError  = problemClass{"internal", http.StatusInternalServerError, "Internal error"}
	unavailable    = problemClass{"unavailable", http.StatusServiceUnavailable, "Unavailable"}
)

// problemClasses lists every class, for the OpenAPI document and the docs.
var problemClasses = []problemClass{badRequest, unauthorized, forbidden, notFound, noSubscription, methodNotAllow,
	conflict, finished, duplicate, tooLarge, unprocessable, internalError, unavailable}

// ProblemTypes maps each problem type to its HTTP status.
func ProblemTypes() map[string]int {
	out := map[string]int{}
	for _, c := range problemClasses {
		out[problemBase+c.name] = c.status
	}
	return out
}

// engineClasses are the engine's error kinds, most specific first, with
// the engine API's wire code.
var engineClasses = []struct {
	err   error
	code  string
	class problemClass
}{
	{engine.ErrDuplicate, "duplicate", duplicate},
	{engine.ErrNoSubscription, "no_subscription", noSubscription},
	{engine.ErrConflict, "conflict", conflict},
	{engine.ErrNotFound, "not_found", notFound},
	{engine.ErrInvalid, "invalid", unprocessable},
	{engine.ErrFinished, "finished", finished},
	{engine.ErrTooLarge, "too_large", tooLarge},
}

// errorProblem classifies an error of the engine API. A request the
// engine refuses as invalid was well-formed JSON of the right shape (this
// layer checked that: 400), so it is 422; JetStream out of reach, or no
// outcome in time, is 503.
func errorProblem(err error) Problem {
	for _, c := range engineClasses {
		if errors.Is(err, c.err) {
			p := c.class.problem(err.Error())
			p.Code = c.code
			return p
		}
	}
	if streams.Unavailable(err) || errors.Is(err, context.DeadlineExceeded) {
		p := unavailable.problem(err.Error() + " (the outcome is unknown: read the state again, or send the request again where it is safe)")
		p.Code = "internal"
		return p
	}
	p := internalError.problem(err.Error())
	p.Code = "internal"
	return p
}

func (c problemClass) problem(detail string) Problem {
	return Problem{Type: problemBase + c.name, Title: c.title, Status: c.status, Detail: detail}
}

// writeProblem answers with p.
func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	p.Instance = r.URL.Path
	body, err := json.Marshal(p)
	if err != nil {
		body = []byte(`{"type":"` + problemBase + `internal","status":500}`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	w.Write(append(body, '\n'))
}

// Deny answers a request refused by authentication (401) or authorization
// (403) with a problem; it is the httpauth.DenyFunc of /v1.
func Deny(w http.ResponseWriter, r *http.Request, status int, detail string) {
	c := forbidden
	if status == http.StatusUnauthorized {
		c = unauthorized
	}
	writeProblem(w, r, c.problem(detail))
}
