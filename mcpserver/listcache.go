package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/list page is the same few thousand definitions for every caller,
// less the ones each caller may not see; encoding them again for every
// request was most of what a per-principal list cost over the SDK's own.
// So each tool's definition is encoded once (toolJSON, keyed by the SDK's
// *mcp.Tool, which is replaced, never changed, when the tool changes) and
// a page is those encodings joined. The envelope (cursor, cache hints,
// _meta, resultType) is encoded per request, as the SDK would, since the
// SDK sets some of it after the middleware returns.

// maxToolJSON bounds the cache: past it, it starts over (a tool changed
// many times leaves its old encodings behind until then).
const maxToolJSON = 1 << 17

// toolJSON is the cache of tools' encodings.
type toolJSON struct {
	mu sync.RWMutex
	by map[*mcp.Tool][]byte
}

// encoded is t as the SDK encodes it in a result (encoding/json, no HTML
// escaping).
func (c *toolJSON) encoded(t *mcp.Tool) ([]byte, error) {
	c.mu.RLock()
	b, ok := c.by[t]
	c.mu.RUnlock()
	if ok {
		return b, nil
	}
	b, err := marshalLikeSDK(t)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.by == nil || len(c.by) >= maxToolJSON {
		c.by = map[*mcp.Tool][]byte{}
	}
	c.by[t] = b
	c.mu.Unlock()
	return b, nil
}

// marshalLikeSDK encodes v as the SDK encodes a JSON-RPC result: with
// encoding/json, HTML characters left as they are.
func marshalLikeSDK(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodedList is a tools/list result whose tools are encoded from the
// cache. It is the SDK's result (embedded, so the SDK sets its _meta and
// resultType as on its own) with its own encoding.
type encodedList struct {
	*mcp.ListToolsResult
	cache *toolJSON
}

// noTools is how an envelope without tools ends: Tools is the last field
// of mcp.ListToolsResult and is encoded even when nil.
var noTools = []byte(`"tools":null}`)

// MarshalJSON is the result's encoding: byte for byte what encoding the
// embedded result would give (TestEncodedListEqualsSDK).
func (l *encodedList) MarshalJSON() ([]byte, error) {
	env := *l.ListToolsResult
	tools := env.Tools
	env.Tools = nil
	head, err := marshalLikeSDK(&env)
	if err != nil {
		return nil, fmt.Errorf("encode tools/list: %w", err)
	}
	if !bytes.HasSuffix(head, noTools) {
		// Not the shape this was written for (an SDK that moved the
		// field): the plain encoding.
		return marshalLikeSDK(l.ListToolsResult)
	}
	if tools == nil {
		return head, nil
	}
	parts := make([][]byte, len(tools))
	size := len(head) + 2
	for i, t := range tools {
		if parts[i], err = l.cache.encoded(t); err != nil {
			return nil, fmt.Errorf("encode tool %s: %w", t.Name, err)
		}
		size += len(parts[i]) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, head[:len(head)-len("null}")]...)
	out = append(out, '[')
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	return append(out, ']', '}'), nil
}
