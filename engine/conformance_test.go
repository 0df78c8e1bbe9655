package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

const corpus = "../../shared/conformance/bpmn/"

// runnable pins what each required conformance file does when started:
// those that need no external worker run to completion now; the others
// wait for the external-tasks issue (they import: see engine/bpmnxml).
var runnable = []struct {
	file    string
	process string
	vars    map[string]any
	want    instance.Status
	// calls are the in-process operations expected to run, in order.
	calls []string
}{
	{file: "zeebe-process-test/start-end.bpmn", process: "start-end", want: instance.Completed},
	{
		file:    "camunda7-examples/camunda-testing-job-announcement-publication.bpmn",
		process: "camunda-testing-job-announcement-publication",
		vars:    map[string]any{"twitter": true, "facebook": false},
		want:    instance.Completed,
		calls: []string{
			"#{jobAnnouncementService.postToWebsite(jobAnnouncementId)}",
			"#{jobAnnouncementService.postToTwitter(jobAnnouncementId)}",
		},
	},
}

func TestConformanceFilesRun(t *testing.T) {
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	eng := openEngine(t, env, ops)
	ctx := context.Background()
	for _, tc := range runnable {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			var calls []string
			p, err := eng.Process(ctx, tc.process, 0)
			if err != nil {
				if _, err := eng.DeployFile(ctx, corpus+tc.file); err != nil {
					t.Fatal(err)
				}
				if p, err = eng.Process(ctx, tc.process, 0); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range p.Nodes {
				if n.Service != nil && n.Service.Operation != "" {
					op := n.Service.Operation
					ops.Register(op, func(context.Context, map[string]any) (map[string]any, error) {
						calls = append(calls, op)
						return nil, nil
					})
				}
			}
			id, err := eng.Start(ctx, tc.process, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			if v := waitDone(t, eng, id); v.Status != tc.want {
				t.Fatalf("status %s, want %s: %+v", v.Status, tc.want, v.Failure)
			}
			if !slices.Equal(calls, tc.calls) {
				t.Fatalf("operations ran %q, want %q", calls, tc.calls)
			}
		})
	}
}
