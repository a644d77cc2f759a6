package sdk

import "context"

type upstreamTokenKey struct{}

// withUpstreamToken puts the call's upstream token in ctx; an empty one
// leaves ctx as it is.
func withUpstreamToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, upstreamTokenKey{}, token)
}

// UpstreamToken returns, inside a tool's Execute, the access token the host
// obtained for this one call to the plugin's upstream: exchanged for the
// calling principal's own token (RFC 8693 token exchange) or the gateway's
// (client credentials), as the plugin's config auth block asks. ok is false
// when the host sent none. The token is a secret: send it to the upstream
// only, for this call only, and never log it or put it in a result. A
// plugin cannot ask the host for any other principal's token.
func UpstreamToken(ctx context.Context) (token string, ok bool) {
	token, ok = ctx.Value(upstreamTokenKey{}).(string)
	return token, ok && token != ""
}
