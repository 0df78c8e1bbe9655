//lint:file-ignore SA1019 the gateway serves the deprecated RPCs older clients still send

package zeebegrpc

import (
	"context"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
)

// DeployProcess is the deprecated form of DeployResource that older
// clients send.
func (g *Gateway) DeployProcess(ctx context.Context, req *pb.DeployProcessRequest) (*pb.DeployProcessResponse, error) {
	res := &pb.DeployResourceRequest{}
	for _, p := range req.GetProcesses() {
		res.Resources = append(res.Resources, &pb.Resource{Name: p.GetName(), Content: p.GetDefinition()})
	}
	dep, err := g.DeployResource(ctx, res)
	if err != nil {
		return nil, err
	}
	out := &pb.DeployProcessResponse{Key: dep.GetKey()}
	for _, d := range dep.GetDeployments() {
		out.Processes = append(out.Processes, d.GetProcess())
	}
	return out, nil
}
