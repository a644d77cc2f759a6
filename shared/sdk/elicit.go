package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// Elicit puts a question to the client that made the call callID (an
// Execution.ID of a call in flight on one of this plugin's tools) and
// returns its answer. params and the answer are MCP's: params are an
// ElicitRequest's params (mode "form" with message and requestedSchema, or
// mode "url" with message, url and elicitationId), the answer an
// ElicitResult (action "accept", "decline" or "cancel", and content on a
// form's accept). A client that cannot answer gets the question declined:
// the answer says "decline". The host refuses a question for a call that is
// not this plugin's or has ended.
func (p *Context) Elicit(ctx context.Context, callID string, params json.RawMessage) (json.RawMessage, error) {
	if callID == "" {
		return nil, errors.New("elicit: no call id")
	}
	if !json.Valid(params) {
		return nil, errors.New("elicit: params are not JSON")
	}
	host, err := p.srv.hostClient()
	if err != nil {
		return nil, err
	}
	resp, err := host.Elicit(ctx, &pb.HostElicitRequest{ExecutionId: callID, ParamsJson: params})
	if err != nil {
		return nil, fmt.Errorf("elicit for call %s: %w", callID, hostError(ctx, err))
	}
	return resp.GetResultJson(), nil
}
