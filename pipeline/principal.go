package pipeline

import (
	"context"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// Principal is who a call is made for (package identity).
type Principal = identity.Principal

type principalKey struct{}

// WithPrincipal returns ctx carrying p: a call made with it (Tools.Execute)
// is made for p. Front ends (the admin socket, MCP) set it from what they
// know of their client.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p.Bounded())
}

// PrincipalFrom returns the principal ctx carries, or Anonymous.
func PrincipalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}
