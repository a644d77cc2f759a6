package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the hot paths of both front ends (hotcall.go for stdio, hothttp.go
// for HTTP) share of the 2026-07-28 protocol: which requests the SDK
// reads as of that protocol, the per-request _meta it requires of them,
// and how it encodes their results.

// selectsNewProtocol says whether the SDK serves a request with _meta m as
// one of the 2026-07-28 protocol, whatever its session negotiated: m names
// a protocol version, a string, no older than 2026-07-28
// (validateRequestMeta). Such a request's _meta is checked, and its result
// marked with the server's name, on any session.
func selectsNewProtocol(m mcp.Meta) bool {
	v, ok := m[mcp.MetaKeyProtocolVersion].(string)
	return ok && v >= newProtocol
}

// newMetaOK says whether _meta m is that of a plain 2026-07-28 request the
// SDK accepts as it is (validateRequestMeta, and the version check after
// it): the protocol version exactly 2026-07-28, client capabilities that
// decode, and the client's name, when given, that decodes. Anything else,
// including a newer version the SDK refuses, is the SDK's to answer.
func newMetaOK(m mcp.Meta) bool {
	if v, _ := m[mcp.MetaKeyProtocolVersion].(string); v != newProtocol {
		return false
	}
	var caps struct {
		mcp.ClientCapabilities
		// The SDK's RootCapabilities, by its shape (the type is deprecated).
		Roots *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"roots,omitempty"`
	}
	if !metaDecodes(m, mcp.MetaKeyClientCapabilities, &caps) {
		return false
	}
	if _, given := m[mcp.MetaKeyClientInfo]; given && !metaDecodes(m, mcp.MetaKeyClientInfo, new(*mcp.Implementation)) {
		return false
	}
	return true
}

// newProtocolResult is a call's result as the SDK encodes that of a
// 2026-07-28 request (of a stateless HTTP request's session, or of a stdio
// session negotiated at 2026-07-28): the server's name in its _meta, and
// its resultType
// (which only the SDK can set on a CallToolResult) after its other
// members, before inputRequests. err is the call's error, or the result's
// when it cannot be encoded.
func (s *Server) newProtocolResult(res mcp.Result, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil {
		return nil, fmt.Errorf("tools/call: a result of type %T", res)
	}
	if r.InputRequests != nil && (len(r.Content) > 0 || r.StructuredContent != nil) {
		// The SDK's word for it (handleMultiRoundTripResult).
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
	}
	m := r.Meta
	if m == nil {
		m = mcp.Meta{}
	}
	if _, ok := m[mcp.MetaKeyServerInfo]; !ok {
		m[mcp.MetaKeyServerInfo] = s.impl
	}
	r.Meta = m
	full, err := marshalLikeSDK(r)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode the result: " + err.Error()}
	}
	kind := `"resultType":"complete"`
	members := full[1 : len(full)-1]
	var tail []byte // ,"inputRequests":{…}
	if r.InputRequests != nil {
		kind = `"resultType":"input_required"`
		rest := *r
		rest.InputRequests = nil
		head, err := marshalLikeSDK(&rest)
		if err != nil || len(head) < 2 || !bytes.HasPrefix(full, head[:len(head)-1]) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode the result: inputRequests not last"}
		}
		members, tail = head[1:len(head)-1], full[len(head)-1:len(full)-1]
		if len(members) == 0 {
			tail = append([]byte{','}, tail...)
		}
	}
	out := make([]byte, 0, len(full)+len(kind)+2)
	out = append(out, '{')
	if len(members) > 0 {
		out = append(append(out, members...), ',')
	}
	out = append(append(append(out, kind...), tail...), '}')
	return out, nil
}

// metaDecodes says whether m[key] decodes into v, as the SDK reads a _meta
// value (decodeMetaValue: encoded again, then decoded into its type), but
// with encoding/json, whose case-insensitive member names make it refuse
// what the SDK refuses and more: the SDK's decoder takes a 32 KB buffer for
// each value, more than the whole call allocates otherwise.
func metaDecodes(m mcp.Meta, key string, v any) bool {
	raw, ok := m[key]
	if !ok || raw == nil {
		return false
	}
	b, err := json.Marshal(raw)
	return err == nil && json.Unmarshal(b, v) == nil
}
