package main

import (
	"io"
	"net/http"
	"sync"

	"github.com/nats-io/nats.go"
)

// health answers /healthz: 200 "ok" while serve is connected and
// provisioned, 503 with the reason otherwise; 200 "degraded: " and what
// while the store's damage records are open (alive, but an operator must
// act: docs/reliability.md, "A damaged store").
type health struct {
	mu     sync.Mutex
	reason string // why serve is not ready; "" when it is
	nc     *nats.Conn
	store  func() error  // what stopped the embedded store; nil: not watched
	damage func() string // the open damage records in a line; nil: not watched
}

func newHealth() *health { return &health{reason: "starting"} }

func (h *health) setReason(reason string) {
	h.mu.Lock()
	h.reason = reason
	h.mu.Unlock()
}

func (h *health) setConn(nc *nats.Conn) {
	h.mu.Lock()
	h.nc = nc
	h.mu.Unlock()
}

// setStore makes failed, the embedded store's failure, part of the check.
func (h *health) setStore(failed func() error) {
	h.mu.Lock()
	h.store = failed
	h.mu.Unlock()
}

// check returns why serve is not healthy, or "".
func (h *health) check() string {
	h.mu.Lock()
	reason, nc, store := h.reason, h.nc, h.store
	h.mu.Unlock()
	if reason == "" && nc != nil && !nc.IsConnected() {
		return "nats connection " + nc.Status().String()
	}
	if reason == "" && store != nil {
		if err := store(); err != nil {
			return "the store failed, so nothing more is acknowledged; restart serve once the disk works or has room again: " + err.Error()
		}
	}
	return reason
}

// setDamage makes damage, the engine's summary of open damage records,
// part of the answer.
func (h *health) setDamage(damage func() string) {
	h.mu.Lock()
	h.damage = damage
	h.mu.Unlock()
}

func (h *health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if reason := h.check(); reason != "" {
		http.Error(w, reason, http.StatusServiceUnavailable)
		return
	}
	h.mu.Lock()
	damage := h.damage
	h.mu.Unlock()
	if damage != nil {
		if d := damage(); d != "" {
			io.WriteString(w, "degraded: "+d+"\n")
			return
		}
	}
	io.WriteString(w, "ok\n")
}

func (h *health) ready() float64 {
	if h.check() == "" {
		return 1
	}
	return 0
}
