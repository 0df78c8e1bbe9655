package api

import (
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/engine/model"
)

func importAll(files []File) ([]*model.Process, error) {
	var procs []*model.Process
	for _, f := range files {
		ps, err := bpmnxml.Parse(strings.NewReader(f.XML))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", engine.ErrInvalid, f.Name, err)
		}
		procs = append(procs, ps...)
	}
	return procs, nil
}
