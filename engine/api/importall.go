package api

import (
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/engine/model"
)

// importAll imports every file; a process id in two files is an error
// naming both.
func importAll(files []File) ([]*model.Process, error) {
	var procs []*model.Process
	from := map[string]string{} // process id → the file it came from
	for _, f := range files {
		ps, err := bpmnxml.Parse(strings.NewReader(f.XML))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", engine.ErrInvalid, f.Name, err)
		}
		for _, p := range ps {
			if prev, dup := from[p.ID]; dup {
				return nil, fmt.Errorf("%w: %s: process %q is also in %s", engine.ErrInvalid, f.Name, p.ID, prev)
			}
			from[p.ID] = f.Name
		}
		procs = append(procs, ps...)
	}
	return procs, nil
}
