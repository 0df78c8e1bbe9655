package api

import (
	"context"

	"github.com/jetbpm/jetbpm/engine"
)

// Process operations: what is deployed.
const (
	OpProcessList = "process.list"
	OpProcessGet  = "process.get"
)

// ProcessListResponse lists the latest version of every deployed process.
type ProcessListResponse struct {
	Processes []engine.ProcessInfo `json:"processes"`
}

// ProcessRequest names a process version (0: the latest); XML asks for the
// BPMN document it was imported from as well, Diagram for a document to
// draw it with (engine.Engine.ProcessDiagram) instead.
type ProcessRequest struct {
	ID      string `json:"id"`
	Version int    `json:"version,omitempty"`
	XML     bool   `json:"xml,omitempty"`
	Diagram bool   `json:"diagram,omitempty"`
}

// ProcessResponse describes a process version, with its BPMN document
// when asked for and kept; LaidOut says the document was laid out from
// the process, which has no diagram of its own.
type ProcessResponse struct {
	engine.ProcessInfo
	XML     string `json:"xml,omitempty"`
	LaidOut bool   `json:"laidOut,omitempty"`
}

// process serves OpProcessGet.
func (h *Handler) process(ctx context.Context, req ProcessRequest) (ProcessResponse, error) {
	info, err := h.eng.ProcessInfo(ctx, req.ID, req.Version)
	if err != nil {
		return ProcessResponse{}, err
	}
	out := ProcessResponse{ProcessInfo: info}
	if req.Diagram {
		doc, laidOut, err := h.eng.ProcessDiagram(ctx, req.ID, info.Version)
		if err != nil {
			return ProcessResponse{}, err
		}
		out.XML, out.LaidOut = string(doc), laidOut
		return out, nil
	}
	if req.XML {
		xml, err := h.eng.ProcessSource(ctx, req.ID, info.Version)
		if err != nil {
			return ProcessResponse{}, err
		}
		out.XML = string(xml)
	}
	return out, nil
}

// Processes lists the deployed processes.
func (c *Client) Processes(ctx context.Context) ([]engine.ProcessInfo, error) {
	var out ProcessListResponse
	err := c.call(ctx, OpProcessList, struct{}{}, &out)
	return out.Processes, err
}

// Process describes a deployed process version, with its BPMN document
// when req.XML.
func (c *Client) Process(ctx context.Context, req ProcessRequest) (ProcessResponse, error) {
	var out ProcessResponse
	err := c.call(ctx, OpProcessGet, req, &out)
	return out, err
}
