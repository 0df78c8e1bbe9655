package rest

import (
	"context"
	"strings"

	"github.com/jetbpm/jetbpm/workerkit"
)

// Camunda7Topic is the job topic of Camunda 7's http-connector, as the
// importer writes it (bpmnxml.HTTPConnectorTopic).
const Camunda7Topic = "jetbpm:http-connector"

// RunCamunda7 is the workerkit handler of Camunda7Topic: Camunda 7's
// http-connector. Its input is the connector's input parameters: url,
// method (GET when absent), headers (a map), payload (a string sent as
// it is, anything else as JSON). Its output is what the connector's
// output parameters read: response (the body as text, null when empty),
// statusCode and headers. As in Camunda 7, any status completes the
// task; a call that gets no answer fails (retried, then an incident),
// and the allow-list, the limits and secrets hold as for Type.
func (c *Connector) RunCamunda7(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
	req, err := DecodeRequest(map[string]any{
		"url": job.Input["url"], "method": job.Input["method"], "headers": job.Input["headers"], "body": job.Input["payload"],
	}, c.secrets)
	if err != nil {
		return nil, final(err)
	}
	resp, err := c.Do(ctx, req)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if err != nil {
		return nil, err
	}
	var text any
	if len(resp.raw) > 0 {
		text = strings.ToValidUTF8(string(resp.raw), "\uFFFD")
	}
	return map[string]any{"response": text, "statusCode": resp.Status, "headers": resp.Headers}, nil
}
