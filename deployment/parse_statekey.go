package deployment

// The host block's mcp_state_key: the key file that seals the requestState
// of a question put to a 2026-07-28 MCP client, shared by replicas so that
// a retry may land on any of them.

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/plugkit-go/plugkit/internal/hclbound"
)

// StateKeyBytes is the size of an mcp_state_key key (AES-256).
const StateKeyBytes = 32

// maxStateKeyFileBytes bounds the key file: a few keys during a rotation.
const maxStateKeyFileBytes = 64 << 10

// mcpStateKey checks the mcp_state_key file and returns its absolute path.
func (p *parser) mcpStateKey(hs *hostSyntax) string {
	if hs.MCPStateKey == nil {
		return ""
	}
	path, shown := p.resolve(*hs.MCPStateKey)
	if _, err := LoadStateKeys(path); err != nil {
		p.errorf(valueRange(hs.Body, "mcp_state_key", hs.DefRange), "Invalid mcp_state_key file", "mcp_state_key %q: %v.", shown, err)
		return ""
	}
	return path
}

// LoadStateKeys reads an mcp_state_key file: one key a line, each 32 bytes
// written as 64 hex digits or in base64 (`openssl rand -hex 32`); blank
// lines and lines starting with # are skipped. The first key seals, every
// one opens: at start, by `host validate` and on every reload.
func LoadStateKeys(path string) ([][]byte, error) {
	data, err := hclbound.ReadAtMost(path, maxStateKeyFileBytes)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := hex.DecodeString(line)
		if err != nil {
			if k, err = base64.StdEncoding.DecodeString(line); err != nil {
				return nil, fmt.Errorf("line %d is not a key written in hex or base64", i+1)
			}
		}
		if len(k) != StateKeyBytes {
			return nil, fmt.Errorf("line %d holds a key of %d bytes; want %d (64 hex digits)", i+1, len(k), StateKeyBytes)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("holds no key; write one a line, 64 hex digits (openssl rand -hex 32)")
	}
	return keys, nil
}
