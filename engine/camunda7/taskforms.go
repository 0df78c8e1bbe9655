package camunda7

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/form"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// Camunda 7's task form endpoints, over the form a task's BPMN file holds
// (a camunda:formData, or a Zeebe embedded form; docs/forms.md):
//
//	GET  /task/{id}/form            {"key", "contextPath"}
//	GET  /task/{id}/form-variables  the form's fields as typed values: the
//	                                variable's value if it is set, else the
//	                                field's default
//	POST /task/{id}/submit-form     {"variables"}: checks them against the
//	                                form, as Camunda 7 checks a generated
//	                                form's constraints, then completes

// formDto is Camunda 7's FormDto.
type formDto struct {
	Key         *string `json:"key"`
	ContextPath *string `json:"contextPath"`
}

// taskFormKey answers GET /task/{id}/form.
func (h *Handler) taskFormKey(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpTaskRead}) {
		return
	}
	t, err := h.eng.Task(r.Context(), r.PathValue("id"))
	if err != nil {
		writeTaskError(w, r.PathValue("id"), err)
		return
	}
	writeJSON(w, http.StatusOK, formDto{Key: nullIfEmpty(t.FormKey)})
}

// taskForm reads task id and the form its file holds, nil for none.
func (h *Handler) taskForm(r *http.Request, id string) (*instance.Task, *form.Schema, error) {
	t, err := h.eng.Task(r.Context(), id)
	if err != nil {
		return nil, nil, err
	}
	schema, err := h.eng.FormOf(r.Context(), t)
	if err != nil || schema == "" {
		return t, nil, err
	}
	f, err := form.Parse([]byte(schema))
	return t, f, err
}

// formVariables answers GET /task/{id}/form-variables (?variableNames=a,b).
func (h *Handler) formVariables(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpTaskRead}) {
		return
	}
	id := r.PathValue("id")
	t, f, err := h.taskForm(r, id)
	if err != nil {
		writeTaskError(w, id, err)
		return
	}
	out := map[string]outVariable{}
	if f == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	inst, err := h.eng.Instance(r.Context(), t.Instance)
	if err != nil {
		writeTaskError(w, id, err)
		return
	}
	var only map[string]bool
	if names := r.URL.Query().Get("variableNames"); names != "" {
		only = map[string]bool{}
		for _, n := range strings.Split(names, ",") {
			only[strings.TrimSpace(n)] = true
		}
	}
	for _, c := range f.Fields() {
		if only != nil && !only[c.Key] {
			continue
		}
		v, ok := t.Variables[c.Key]
		if !ok {
			v, ok = inst.Variables[c.Key]
		}
		if !ok {
			v = c.DefaultValue
		}
		out[c.Key] = fieldValue(c, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// fieldValue types v as field c: a whole number in a long field is a
// Long (not the Integer a small number would be), no value is a null of
// the field's type.
func fieldValue(c *form.Component, v any) outVariable {
	if v == nil {
		return outVariable{nil, fieldType(c), map[string]any{}}
	}
	out := encodeValue(v)
	if out.Type == "Integer" && fieldType(c) == "Long" {
		out.Type = "Long"
	}
	return out
}

// fieldType is the Camunda type of field c's values.
func fieldType(c *form.Component) string {
	switch c.Type {
	case "number":
		if c.DecimalDigits != nil && *c.DecimalDigits == 0 {
			return "Long"
		}
		return "Double"
	case "checkbox":
		return "Boolean"
	}
	return "String"
}

// submitForm answers POST /task/{id}/submit-form: the variables are
// checked against the task's form, then the task completes with them.
func (h *Handler) submitForm(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpTaskWork}) {
		return
	}
	var body struct {
		Variables map[string]Variable `json:"variables"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	id := r.PathValue("id")
	vars, err := decodeVariables(body.Variables)
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
		return
	}
	_, f, err := h.taskForm(r, id)
	if err != nil {
		writeTaskError(w, id, err)
		return
	}
	if f != nil {
		if err := f.Check(vars); err != nil {
			msg := strings.ReplaceAll(err.Error(), "\n", "; ")
			writeError(w, http.StatusBadRequest, "InvalidRequestException", fmt.Sprintf("Cannot submit task form %s: %s", id, msg))
			return
		}
	}
	if _, err := h.do(r.Context(), api.OpTaskComplete, api.TaskRequest{ID: id, Vars: mustJSON(vars)}); err != nil {
		writeTaskError(w, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeTaskError answers a task's unknown id as Camunda does, else the
// engine's error.
func writeTaskError(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, engine.ErrNotFound) {
		writeError(w, http.StatusNotFound, "InvalidRequestException", fmt.Sprintf("Cannot find task with id %s: %v", id, err))
		return
	}
	writeEngineError(w, err)
}
