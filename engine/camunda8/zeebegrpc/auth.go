package zeebegrpc

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// access is what each RPC needs (docs/camunda8-migration.md §6); an RPC
// not listed needs the operator's.
var access = map[string]httpauth.Access{
	"Topology":       httpauth.Read,
	"PublishMessage": httpauth.Integrate, "BroadcastSignal": httpauth.Integrate,
	"ActivateJobs": httpauth.Work, "CompleteJob": httpauth.Work, "FailJob": httpauth.Work, "ThrowError": httpauth.Work,
}

// Authenticate returns the server options that make every call present
// credentials auth accepts — the "authorization" metadata the Camunda 8
// clients send, HTTP Basic or a bearer token — and hold a role that
// allows the RPC. With auth open (no --http-auth) every call is the
// operator's.
func Authenticate(auth *httpauth.Authenticator) []grpc.ServerOption {
	check := func(ctx context.Context, method string) (context.Context, error) {
		r := &http.Request{Header: http.Header{}}
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get("authorization"); len(v) > 0 {
				r.Header.Set("Authorization", v[0])
			}
		}
		p, err := auth.Authenticate(r)
		if err != nil {
			return nil, status.Error(codes.Unauthenticated, err.Error())
		}
		rpc := path.Base(method)
		need, ok := access[rpc]
		if !ok {
			need = httpauth.Operate
		}
		if !p.Allows(need) {
			roles := make([]string, 0, 2)
			for _, r := range httpauth.RolesFor(need) {
				roles = append(roles, string(r))
			}
			return nil, status.Error(codes.PermissionDenied, fmt.Sprintf("%s may not call %s: it needs one of the roles %s", p.Name, rpc, strings.Join(roles, ", ")))
		}
		return httpauth.WithPrincipal(ctx, p), nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, err := check(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, err := check(ss.Context(), info.FullMethod)
			if err != nil {
				return err
			}
			return h(srv, &principalStream{ServerStream: ss, ctx: ctx})
		}),
	}
}

// principalStream is a server stream whose context carries the caller.
type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *principalStream) Context() context.Context { return s.ctx }
