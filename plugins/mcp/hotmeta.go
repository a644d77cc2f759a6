package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session of 2026-07-28 or later carries a protocol _meta on every
// request (SEP-2575): the protocol version, the client's information and
// its capabilities, which the SDK's client computes from its options and
// adds to each request it sends. The bridge's own client cannot compute
// the capabilities (the SDK keeps that unexported), so it takes them as the
// SDK wrote them: the first request the SDK sends after the handshake (the
// bridge's tools/list) carries the three, and from then on the bridge's
// tools/call carries the same bytes (TestHotClientModernAnswersAsTheSDK).
// Until then a call goes through the SDK, as it did before.
//
// A server of such a session may answer a call with input required (the
// multi-round-trip of SEP-2322: questions for the client, then a retry):
// the bridge's client sees it in the result and leaves the call to the
// SDK's client, which answers them and retries (callNeedsSDK).

// requestMeta is the protocol _meta the SDK put on its requests, each value
// as it encoded it.
type requestMeta map[string]json.RawMessage

// metaKeys are the members of the per-request protocol _meta; the version
// and the capabilities are always there, the client's information when the
// client has one.
var metaKeys = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// noteRequestMeta keeps the protocol _meta of msg, a message the SDK
// writes, once: the first request that has one.
func noteRequestMeta(into *atomic.Pointer[requestMeta], msg []byte) {
	if into.Load() != nil || !bytes.Contains(msg, []byte(mcp.MetaKeyClientCapabilities)) {
		return
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || req.Method == "" {
		return
	}
	m := requestMeta{}
	for _, k := range metaKeys {
		if v, ok := req.Params.Meta[k]; ok {
			m[k] = v
		}
	}
	if m[mcp.MetaKeyProtocolVersion] == nil || m[mcp.MetaKeyClientCapabilities] == nil {
		return
	}
	into.CompareAndSwap(nil, &m)
}

// withRequestMeta is params with the protocol _meta added where it does not
// have the key already, as the SDK adds it; params itself is not changed.
func withRequestMeta(params *mcp.CallToolParams, m requestMeta) *mcp.CallToolParams {
	p := *params
	p.Meta = make(mcp.Meta, len(params.Meta)+len(m))
	maps.Copy(p.Meta, params.Meta)
	for k, v := range m {
		if _, ok := p.Meta[k]; !ok {
			p.Meta[k] = v
		}
	}
	return &p
}

// callNeedsSDK says whether a result is one the SDK's client goes on with
// rather than returns: input required, or questions for the client.
func callNeedsSDK(res *mcp.CallToolResult) bool {
	return res != nil && (res.NeedsInput() || res.InputRequests != nil)
}

// hotServes says whether the bridge's own client sends the session's
// tools/call, and whether the session is of 2026-07-28 or later.
func (b *bridge) hotServes() (ok, modern bool) {
	if b.hot == nil {
		return false, false // a server reached by url
	}
	return b.hot.serves(b.cs)
}
