package server

import (
	"context"
	"errors"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/deployment"
)

// newVerifier checks the credentials an mcp_auth block accepts (API keys
// from its keys file, an OAuth issuer's access tokens), which MCP clients
// present and the console's sign-in takes. ctx bounds what it keeps
// running (following the issuer's keys). reloadKeys reads the keys file
// again, keeping the keys in use when the file does not load.
func newVerifier(ctx context.Context, a *deployment.MCPAuth, log hclog.Logger) (v *authn.Authenticator, reloadKeys func(), err error) {
	cfg := authn.Config{OAuth: a.OAuth}
	if a.Keys != "" {
		keys, diags := authn.LoadKeys(a.Keys)
		if diags.HasErrors() {
			return nil, nil, errors.New(diags.Error())
		}
		cfg.Keys = keys
	}
	v, err = authn.New(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	reloadKeys = func() {
		if a.Keys == "" {
			return
		}
		keys, diags := authn.LoadKeys(a.Keys)
		if diags.HasErrors() {
			log.Error("mcp_auth: keys file not reloaded; the keys in use stay", "error", diags.Error())
			return
		}
		v.SetKeys(keys)
		log.Info("mcp_auth: keys reloaded", "keys", keys.Len())
	}
	return v, reloadKeys, nil
}
