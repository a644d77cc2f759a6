package sdk

import "context"

type serviceCallerKey struct{}

func withServiceCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, serviceCallerKey{}, caller)
}

// ServiceCaller returns, inside a service Method, the name of the plugin (or
// host component) that called it; "" elsewhere.
func ServiceCaller(ctx context.Context) string {
	s, _ := ctx.Value(serviceCallerKey{}).(string)
	return s
}
