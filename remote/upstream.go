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

// upstreamRefused is told that the plugin's upstream refused the token of
// p's call (the plugin said wire.UpstreamRefused): a user_consent token is
// dropped, and the error asks p to consent again.
func (in *instance) upstreamRefused(ctx context.Context, u *tokenexchange.Upstream, p pipeline.Principal) error {
	if in.tokens == nil {
		return nil
	}
	return in.tokens.Refused(ctx, u, p.Kind+":"+p.ID)
}
