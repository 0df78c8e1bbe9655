package camunda7

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jetbpm/jetbpm/engine"
)

// Executions. jetbpm has no execution tree; the door names the token
// waiting at activity A of instance I as execution "I:A" (the
// executionId of its external tasks, user tasks and incidents too), and
// accepts the instance id itself where Camunda's process-instance
// execution is the one waiting.

// execution is an entry of GET /execution.
type execution struct {
	ID                string  `json:"id"`
	ProcessInstanceID string  `json:"processInstanceId"`
	Ended             bool    `json:"ended"`
	TenantID          *string `json:"tenantId"`
}

// listExecutions serves GET /execution for one process instance
// (processInstanceId, required), one execution per active activity,
// filtered by activityId.
func (h *Handler) listExecutions(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpRead}) {
		return
	}
	q := r.URL.Query()
	id := q.Get("processInstanceId")
	if id == "" {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "jetbpm lists the executions of one process instance: give processInstanceId")
		return
	}
	out := []execution{}
	v, err := h.eng.Instance(r.Context(), id)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		writeJSON(w, http.StatusOK, out) // Camunda: an empty list
		return
	case err != nil:
		writeEngineError(w, err)
		return
	}
	if !v.Status.Finished() {
		activity := q.Get("activityId")
		for _, n := range v.ActiveNodes {
			if activity == "" || n == activity {
				out = append(out, execution{ID: v.ID + ":" + n, ProcessInstanceID: v.ID})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// signalRequest is the body of POST /execution/{id}/signal.
type signalRequest struct {
	Variables map[string]Variable `json:"variables"`
}

// signalExecution serves POST /execution/{id}/signal: the token waiting at
// a receive task without a message moves on (engine.Engine.Trigger), the
// variables its results.
func (h *Handler) signalExecution(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpSignal}) {
		return
	}
	var req signalRequest
	if !decodeBody(w, r, &req) {
		return
	}
	vars, err := decodeVariables(req.Variables)
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
		return
	}
	id, node, _ := strings.Cut(r.PathValue("id"), ":")
	if _, err := h.eng.Trigger(r.Context(), id, node, vars); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			writeError(w, http.StatusNotFound, "InvalidRequestException", fmt.Sprintf("execution %s doesn't exist: %v", r.PathValue("id"), err))
			return
		}
		writeEngineError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
