package rest

import (
	"net/http"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
)

// publish publishes a message, buffered for timeToLive; a messageId
// published before is 409.
func (h *Handler) publish(w http.ResponseWriter, r *http.Request) {
	var m struct {
		Name           string         `json:"name"`
		CorrelationKey string         `json:"correlationKey"`
		TimeToLive     int64          `json:"timeToLive"`
		MessageID      string         `json:"messageId"`
		Variables      map[string]any `json:"variables"`
		TenantID       string         `json:"tenantId"`
	}
	if !h.decode(w, r, &m) || !checkTenant(w, r, m.TenantID) {
		return
	}
	if m.Name == "" {
		invalid(w, r, "expected a message name, but none given")
		return
	}
	k, err := h.svc.Publish(r.Context(), engine.Message{Name: m.Name, Key: m.CorrelationKey, Vars: m.Variables,
		TTL: time.Duration(m.TimeToLive) * time.Millisecond, ID: m.MessageID})
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, struct {
		TenantID   string       `json:"tenantId"`
		MessageKey camunda8.Key `json:"messageKey,string"`
	}{tenant, k})
}

// correlate delivers a message to the subscription waiting for it (or
// starts the instance its message start event names) and answers the
// instance that took it; with none, 404 — nothing is buffered.
func (h *Handler) correlate(w http.ResponseWriter, r *http.Request) {
	var m struct {
		Name           string         `json:"name"`
		CorrelationKey string         `json:"correlationKey"`
		Variables      map[string]any `json:"variables"`
		TenantID       string         `json:"tenantId"`
	}
	if !h.decode(w, r, &m) || !checkTenant(w, r, m.TenantID) {
		return
	}
	if m.Name == "" {
		invalid(w, r, "expected a message name, but none given")
		return
	}
	msg, inst, err := h.svc.Correlate(r.Context(), engine.Message{Name: m.Name, Key: m.CorrelationKey, Vars: m.Variables})
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, struct {
		TenantID           string       `json:"tenantId"`
		MessageKey         camunda8.Key `json:"messageKey,string"`
		ProcessInstanceKey camunda8.Key `json:"processInstanceKey,string"`
	}{tenant, msg, inst})
}

// broadcast broadcasts a signal.
func (h *Handler) broadcast(w http.ResponseWriter, r *http.Request) {
	var s struct {
		SignalName string         `json:"signalName"`
		Variables  map[string]any `json:"variables"`
		TenantID   string         `json:"tenantId"`
	}
	if !h.decode(w, r, &s) || !checkTenant(w, r, s.TenantID) {
		return
	}
	if s.SignalName == "" {
		invalid(w, r, "expected a signalName, but none given")
		return
	}
	k, err := h.svc.Broadcast(r.Context(), engine.Signal{Name: s.SignalName, Vars: s.Variables})
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, struct {
		TenantID  string       `json:"tenantId"`
		SignalKey camunda8.Key `json:"signalKey,string"`
	}{tenant, k})
}
