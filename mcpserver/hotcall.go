package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hot path of a stdio session: tools/call requests are read and
// answered here, not by the MCP SDK. The SDK decodes each message it reads
// several times (the envelope, then the params for _meta, then again into
// the handler's type), each time with a new decoder that allocates a 32 KB
// buffer: about 150 KB of garbage per call on the server's side alone,
// most of what a call through the front end allocated. Here a tools/call
// line is decoded once, with encoding/json into the few fields a call
// has, and its result written with the SDK's own encoders
// (jsonrpc.EncodeMessage), so the bytes are the SDK's
// (TestHotCallsAnswerAsTheSDK, FuzzHotCallDecode). Everything else (the
// handshake, lists, elicitation, notifications, responses to the host's
// own requests) stays the SDK's.
//
// A call is taken only when it is plain: one request (not a batch),
// params that decode, no retry of an input-required result, and a session
// whose protocol the hot path speaks as the SDK does:
//
//   - a legacy session (before 2026-07-28) that has finished its
//     handshake, and a request whose _meta does not select the 2026-07-28
//     protocol (which the SDK would check, and mark its result, on any
//     session);
//   - a session of 2026-07-28 (the protocol the SDK's client speaks by
//     default, which on stdio starts with server/discover and has no
//     handshake), once the SDK has read its protocol (from server/discover
//     or a first request), and a request whose _meta the SDK accepts as it
//     is (newMetaOK, shared with the HTTP hot path). Its result is encoded
//     as the SDK encodes one of that protocol (newProtocolResult): a
//     resultType, the server's name in _meta, an input-required result
//     when the call asks the client.
//
// Anything else, well formed or not, goes to the SDK as before, which
// words its errors. A taken call is served by the same middleware and
// handlers as the SDK would call (refuseUnknown, callTool, searchTools),
// with the session's *mcp.ServerSession, so that questions and progress
// reach the client as on any call; a notifications/cancelled naming it
// cancels it.

// hotCalls serves one stdio session's tools/call requests.
type hotCalls struct {
	s   *Server
	out io.Writer // the session's output, shared with the SDK (lockedWriter)

	ss          atomic.Pointer[mcp.ServerSession]
	initialized atomic.Bool // notifications/initialized was read

	ctx    context.Context // ends with the session
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inFlight map[jsonrpc.ID]context.CancelFunc
}

func (s *Server) newHotCalls(out io.Writer) *hotCalls {
	ctx, cancel := context.WithCancel(s.base)
	return &hotCalls{s: s, out: out, ctx: ctx, cancel: cancel, inFlight: map[jsonrpc.ID]context.CancelFunc{}}
}

// stop cancels the calls in flight and waits for them to answer.
func (h *hotCalls) stop() {
	h.cancel()
	h.wg.Wait()
}

// hotParams is what a call has of its params.
type hotParams struct {
	Meta      mcp.Meta
	Name      string
	Arguments json.RawMessage
}

// cancelNote is what is read of a notifications/cancelled line.
type cancelNote struct {
	Method string `json:"method"`
	Params *struct {
		RequestID any `json:"requestId"`
	} `json:"params"`
}

// take reads line, one message as read from the client (ids already made
// exact, see stdioIDs), and says whether it serves it; if not, the SDK
// gets it. A cancellation is noted and passed on either way.
func (h *hotCalls) take(line []byte) bool {
	if bytes.Contains(line, []byte(`"tools/call"`)) && h.takeCall(line) {
		return true
	}
	switch {
	case bytes.Contains(line, []byte(`"notifications/cancelled"`)):
		var n cancelNote
		if json.Unmarshal(line, &n) == nil && n.Method == "notifications/cancelled" && n.Params != nil {
			if id, err := jsonrpc.MakeID(n.Params.RequestID); err == nil {
				h.mu.Lock()
				if cancel := h.inFlight[id]; cancel != nil {
					cancel()
				}
				h.mu.Unlock()
			}
		}
	case !h.initialized.Load() && bytes.Contains(line, []byte(`"notifications/initialized"`)):
		var n struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(line, &n) == nil && n.Method == "notifications/initialized" {
			h.initialized.Store(true)
		}
	}
	return false
}

// takeCall starts serving a tools/call line, if it is one to serve.
func (h *hotCalls) takeCall(line []byte) bool {
	ss := h.ss.Load()
	if ss == nil {
		return false
	}
	version := ""
	if ip := ss.InitializeParams(); ip != nil && (ip.ProtocolVersion >= newProtocol || h.initialized.Load()) {
		version = ip.ProtocolVersion
	}
	id, p, ok := plainStdioCall(line, version)
	if !ok {
		return false
	}
	h.mu.Lock()
	if _, dup := h.inFlight[id]; dup || h.ctx.Err() != nil {
		// A second request with the id of one in flight: the SDK says
		// what it says of that.
		h.mu.Unlock()
		return false
	}
	ctx, cancel := context.WithCancel(h.ctx)
	h.inFlight[id] = cancel
	h.s.hotTaken.Add(1)
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		res, err := h.serve(ctx, ss, p)
		var result json.RawMessage
		if version >= newProtocol {
			result, err = h.s.newProtocolResult(res, err)
		} else {
			result, err = legacyResult(res, err)
		}
		h.mu.Lock()
		delete(h.inFlight, id)
		h.mu.Unlock()
		cancel()
		if werr := h.answer(id, result, err); werr != nil && ignoreClosed(werr) != nil {
			h.s.log.Warn("answering a tools/call", "tool", p.Name, "error", werr)
		}
	}()
	return true
}

// plainStdioCall decodes line as a plain tools/call of a stdio session
// whose protocol is version ("" for a session the hot path does not serve
// yet: no protocol read, or a legacy handshake not finished); ok is false
// for anything to leave to the SDK.
func plainStdioCall(line []byte, version string) (jsonrpc.ID, *hotParams, bool) {
	if version == "" {
		return jsonrpc.ID{}, nil, false
	}
	id, p, ok := decodeHotCall(line)
	switch {
	case !ok:
		return jsonrpc.ID{}, nil, false
	case version < newProtocol && selectsNewProtocol(p.Meta):
		// A legacy session's request of the new protocol: the SDK checks
		// its _meta and marks its result.
		return jsonrpc.ID{}, nil, false
	case version >= newProtocol && !newMetaOK(p.Meta):
		// No protocol in _meta (the SDK serves it as the session's, with
		// no server name in its result), one it refuses, or _meta it
		// cannot read.
		return jsonrpc.ID{}, nil, false
	}
	return id, p, true
}

// decodeHotCall decodes a plain tools/call line: its id as the SDK reads
// it, and its params. ok is false for anything to leave to the SDK. Member
// names match exactly, as the SDK's decoder matches them (encoding/json
// alone would take "NAME" for "name"); of a member given twice the last
// counts, as in the SDK's.
func decodeHotCall(line []byte) (jsonrpc.ID, *hotParams, bool) {
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if len(line) == 0 || line[0] != '{' || line[len(line)-1] != '}' {
		// A batch, not JSON, or space around the message (which the SDK's
		// reader may refuse): the SDK's.
		return jsonrpc.ID{}, nil, false
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(line, &env) != nil {
		return jsonrpc.ID{}, nil, false
	}
	var version, method string
	if !exactString(env["jsonrpc"], &version) || version != "2.0" || !exactString(env["method"], &method) || method != "tools/call" {
		return jsonrpc.ID{}, nil, false
	}
	for k := range env {
		if k != "jsonrpc" && k != "id" && k != "method" && k != "params" {
			return jsonrpc.ID{}, nil, false // result, error: not a plain request
		}
	}
	id, ok := hotID(env["id"])
	if !ok {
		return jsonrpc.ID{}, nil, false
	}
	var params map[string]json.RawMessage
	if raw := env["params"]; len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &params) != nil {
		return jsonrpc.ID{}, nil, false
	}
	p := &hotParams{}
	for k, v := range params {
		switch k {
		case "name":
			if !exactString(v, &p.Name) {
				return jsonrpc.ID{}, nil, false
			}
		case "arguments":
			p.Arguments = v
		case "_meta":
			if string(v) == "null" {
				continue
			}
			if v[0] != '{' || json.Unmarshal(v, &p.Meta) != nil {
				return jsonrpc.ID{}, nil, false
			}
		default:
			// inputResponses, requestState (a retry) and anything a later
			// protocol adds: the SDK's.
			return jsonrpc.ID{}, nil, false
		}
	}
	if p.Name == "" {
		return jsonrpc.ID{}, nil, false
	}
	return id, p, true
}

// exactString decodes raw, a JSON string, into s.
func exactString(raw json.RawMessage, s *string) bool {
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, s) == nil
}

// hotID is a request id as the SDK reads it: a string, or an integer it
// keeps exactly (exactIDs made any other a string already).
func hotID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if len(raw) == 0 {
		return jsonrpc.ID{}, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	lit := string(raw)
	if !keptBySDK(lit) {
		return jsonrpc.ID{}, false
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}

// serve runs the call as the SDK would: the receiving middleware that
// concerns tools/call, then the tool's handler.
func (h *hotCalls) serve(ctx context.Context, ss *mcp.ServerSession, p *hotParams) (mcp.Result, error) {
	req := &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Meta: p.Meta, Name: p.Name, Arguments: p.Arguments}}
	return h.s.refuseUnknown(h.s.handleCall)(ctx, "tools/call", req)
}

// handleCall is what the SDK does with a tools/call that reaches it: the
// tool's handler if the tool is served, an unknown-tool error if not, and
// an empty content list rather than none (but for an input-required
// result of the sessionless protocol).
func (s *Server) handleCall(ctx context.Context, _ string, r mcp.Request) (mcp.Result, error) {
	req := r.(*mcp.CallToolRequest)
	handler := s.callTool
	switch {
	case s.searching() && req.Params.Name == SearchToolName:
		handler = s.searchTools
	case !s.serves(req.Params.Name):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", req.Params.Name)}
	}
	res, err := handler(ctx, req)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("tools/call %s: no result", req.Params.Name)
	}
	if res.Content == nil && (res.InputRequests == nil || legacy(req.Session)) {
		// An input-required result of a 2026-07-28 request keeps its null
		// content, as the SDK keeps it.
		res2 := *res
		res2.Content = []mcp.Content{}
		res = &res2
	}
	return res, nil
}

// answer writes the response to a call, encoded as the SDK encodes it.
func (h *hotCalls) answer(id jsonrpc.ID, result json.RawMessage, err error) error {
	data, eerr := hotResponse(id, result, err)
	if eerr != nil {
		return eerr
	}
	_, werr := h.out.Write(append(data, '\n'))
	return werr
}

// legacyResult is a call's result as the SDK encodes that of a request of
// a protocol before 2026-07-28: as it is. err is the call's error, or the
// result's when it cannot be encoded.
func legacyResult(res mcp.Result, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	raw, merr := marshalLikeSDK(res)
	if merr != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode the result: " + merr.Error()}
	}
	return raw, nil
}

// hotResponse is the JSON-RPC response to a call, encoded as the SDK
// encodes it.
func hotResponse(id jsonrpc.ID, result json.RawMessage, err error) ([]byte, error) {
	data, eerr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: result, Error: err})
	if eerr != nil {
		return nil, fmt.Errorf("encode the response: %w", eerr)
	}
	return data, nil
}

// served is the set of tools the SDK serves (those of listed), which sync
// keeps: each says whether its schema may name arguments a request must
// repeat in its headers (x-mcp-header), which the SDK checks over HTTP.
type servedSet = map[string]bool

// serves reports whether the SDK serves the tool name.
func (s *Server) serves(name string) bool {
	m := s.served.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[name]
	return ok
}

// noteServed records the tools the SDK now serves; sync calls it after
// each change.
func (s *Server) noteServed() {
	m := make(servedSet, len(s.listed))
	for name, t := range s.listed {
		m[name] = bytes.Contains(t.Parameters, []byte("x-mcp-header"))
	}
	s.served.Store(&m)
}

// lockedWriter serializes the writes of the SDK and of the hot path: each
// Write is one whole message.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
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
