package console

import (
	"context"

	"github.com/jetbpm/jetbpm/engine"
)

type processInfo struct {
	ID, Name string
	Version  int
	Versions []int
}

// TEMPORARY until h-http's engine.Processes is merged.
func listProcesses(ctx context.Context, eng *engine.Engine) ([]processInfo, error) { return nil, nil }
