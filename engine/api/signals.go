package api

import (
	"context"
	"encoding/json"

	"github.com/jetbpm/jetbpm/engine"
)

// OpSignalBroadcast broadcasts a signal (docs/signals.md).
const OpSignalBroadcast = "signal.broadcast"

// SignalRequest broadcasts signal Name with the variables Vars (a JSON
// object); ID, when set, makes a repeated broadcast apply once.
type SignalRequest struct {
	Name string          `json:"name"`
	Vars json.RawMessage `json:"vars,omitempty"`
	ID   string          `json:"id,omitempty"`
}

// SignalResponse is what the broadcast reached: the instances it was
// sent to and those its signal start events started.
type SignalResponse = engine.SignalResult

// signal serves OpSignalBroadcast.
func (h *Handler) signal(ctx context.Context, req SignalRequest) (SignalResponse, error) {
	vars, err := decodeVars(req.Vars)
	if err != nil {
		return SignalResponse{}, err
	}
	return h.eng.BroadcastSignal(ctx, engine.Signal{Name: req.Name, Vars: vars, ID: req.ID})
}

// BroadcastSignal broadcasts a signal and returns what it reached.
func (c *Client) BroadcastSignal(ctx context.Context, req SignalRequest) (SignalResponse, error) {
	var out SignalResponse
	err := c.call(ctx, OpSignalBroadcast, req, &out)
	return out, err
}
