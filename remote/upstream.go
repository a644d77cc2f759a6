package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/tokenexchange"
)

// upstreamToken is the token a call of the plugin's tools presents to its
// upstream, obtained for the call's principal (whose own token the call's
// context carries) and for nobody else. A user_consent principal who has
// not consented is asked through the calling client when it can be (a
// URL-mode elicitation), and the call waits for the consent; otherwise, or
// when the client declines, the error names the URL.
func (in *instance) upstreamToken(ctx context.Context, u *tokenexchange.Upstream, e *pipeline.Execution) (string, error) {
	if in.tokens == nil {
		return "", errors.New("the host has no token broker for its auth block")
	}
	p := e.Principal()
	principal := p.Kind + ":" + p.ID
	ctx = tokenexchange.WithCall(ctx, e.ID())
	tok, err := in.tokens.Token(ctx, u, principal)
	var asked tokenexchange.Asked
	if err == nil || in.elicit == nil || !errors.As(err, &asked) || asked.ConsentID() == "" {
		return tok, err
	}
	params, merr := json.Marshal(map[string]string{
		"mode":          "url",
		"message":       fmt.Sprintf("Sign in to %s and allow access, so that this call can reach it as you. The call goes on once you have.", u.URL),
		"url":           asked.ConsentURL(),
		"elicitationId": asked.ConsentID(),
	})
	if merr != nil {
		return "", err
	}
	out, eerr := in.elicit(ctx, e, params)
	if eerr != nil {
		return "", err
	}
	var answer struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(out, &answer) != nil || answer.Action != "accept" {
		// Declined, cancelled, or a client that cannot be asked: the
		// message names the URL, to open and call again.
		return "", err
	}
	return in.tokens.Await(ctx, u, principal, asked.ConsentID())
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
