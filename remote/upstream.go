package remote

import (
	"context"
	"errors"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/tokenexchange"
)

// upstreamToken is the token a call of the plugin's tools presents to its
// upstream, obtained for the call's principal (whose own token the call's
// context carries) and for nobody else.
func (in *instance) upstreamToken(ctx context.Context, u *tokenexchange.Upstream, p pipeline.Principal) (string, error) {
	if in.tokens == nil {
		return "", errors.New("the host has no token broker for its auth block")
	}
	return in.tokens.Token(ctx, u, p.Kind+":"+p.ID)
}
