package rest

import (
	"net/http"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
)

// message is a publication or correlation request.
type message struct {
	Name           string         `json:"name"`
	CorrelationKey string         `json:"correlationKey"`
	TimeToLive     int64          `json:"timeToLive"` // publication only
	MessageID      string         `json:"messageId"`  // publication only
	Variables      map[string]any `json:"variables"`
	TenantID       string         `json:"tenantId"`
}

// decodeMessage reads a message request, answering a bad one itself.
func (h *Handler) decodeMessage(w http.ResponseWriter, r *http.Request) (engine.Message, bool) {
	var m message
	if !h.decode(w, r, &m) || !checkTenant(w, r, m.TenantID) {
		return engine.Message{}, false
	}
	if m.Name == "" {
		invalid(w, r, "expected a message name, but none given")
		return engine.Message{}, false
	}
	return engine.Message{Name: m.Name, Key: m.CorrelationKey, Vars: m.Variables,
		TTL: time.Duration(m.TimeToLive) * time.Millisecond, ID: m.MessageID}, true
}

// publish publishes a message, buffered for timeToLive; a messageId
// published before is 409.
func (h *Handler) publish(w http.ResponseWriter, r *http.Request) {
	m, ok := h.decodeMessage(w, r)
	if !ok {
		return
	}
	k, err := h.svc.Publish(r.Context(), m)
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
// instance that took it; with none, 404 — nothing is buffered. A
// correlation has no time to live or id: those fields are refused.
func (h *Handler) correlate(w http.ResponseWriter, r *http.Request) {
	m, ok := h.decodeMessage(w, r)
	if !ok {
		return
	}
	if m.TTL != 0 || m.ID != "" {
		invalid(w, r, "a correlation buffers nothing and has no id: leave timeToLive and messageId out")
		return
	}
	msg, inst, err := h.svc.Correlate(r.Context(), m)
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
