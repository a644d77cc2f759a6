package sdk

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// contain runs fn and turns a panic into an error, so a faulty handler costs
// one failed call and the plugin keeps serving. The stack goes to the log,
// not into the host's reply.
func contain(log hclog.Logger, what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(log, what, r)
		}
	}()
	return fn()
}

func panicError(log hclog.Logger, what string, r any) error {
	log.Error("panic in plugin code", "in", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return fmt.Errorf("panic in %s: %v", what, r)
}

// recoverInterceptors are the safety net under contain: a panic anywhere in an
// RPC (the SDK's own code included) fails that RPC with codes.Internal
// instead of ending the process.
func recoverInterceptors(log hclog.Logger) []grpc.ServerOption {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, status.Error(codes.Internal, panicError(log, info.FullMethod, r).Error())
			}
		}()
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = status.Error(codes.Internal, panicError(log, info.FullMethod, r).Error())
			}
		}()
		return handler(srv, ss)
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}
