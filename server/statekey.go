package server

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// useStateKey gives srv the deployment's mcp_state_key keys, which seal the
// requestState of a question put to a 2026-07-28 client, and returns what
// reads them again on a reload (a rotation). Without a key file the server
// seals with a key of its own and nothing is read again.
func useStateKey(srv *mcpserver.Server, path string, log hclog.Logger) (refresh func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	keys, err := deployment.LoadStateKeys(path)
	if err == nil {
		err = srv.UseStateKeys(keys)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp_state_key: %w", err)
	}
	return func() {
		keys, err := deployment.LoadStateKeys(path)
		if err == nil {
			err = srv.UseStateKeys(keys)
		}
		if err != nil {
			log.Error("mcp_state_key: keys not reloaded; the keys in use stay", "error", err)
			return
		}
		log.Info("mcp_state_key: keys reloaded", "keys", len(keys))
	}, nil
}
