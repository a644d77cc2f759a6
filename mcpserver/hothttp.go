package mcpserver

import (
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hot path of streamable HTTP: a 2026-07-28 POST carrying one plain
// tools/call is read and answered here, not by the SDK's stateless
// handler. For each such request the SDK reads the body four times over
// (its batch reader, the request check, the _meta check, the handler's
// params), each time with a new decoder and its 32 KB buffer, and connects
// a server session of its own that lasts the request: under load, a fifth
// of the host's CPU and most of its garbage. Here the body is decoded once
// (decodeHotCall, the stdio hot path's), the call served by the same
// middleware and handlers as the SDK's (refuseUnknown, callTool,
// searchTools) with no session, which is what a stateless request's
// session amounts to: a tools/call of the sessionless protocol sends the
// client nothing but its answer (a question or a wait becomes an
// input-required or come-back result). The answer is encoded and framed
// as the SDK frames it (TestHotHTTPAnswersAsTheSDK).
//
// A request is taken only when everything the SDK would check of it
// passes and is plain: the exact protocol header, a JSON body of one
// request (no batch, no retry with requestState or inputResponses, no
// progress token), the _meta the SDK requires (protocol version equal to
// the header's, client capabilities and, if given, client info that
// decode), the Mcp-Method and Mcp-Name headers matching the body, no
// Mcp-Param-* header and a tool whose schema names no header parameter,
// a Host header that the SDK's DNS-rebinding check lets through. Anything
// else, well formed or not, goes to the SDK, which words its errors.

// hotStateless serves the plain tools/call requests of the sessionless
// protocol itself and hands anything else to next (the SDK's stateless
// handler), with the body as it was sent.
func (s *Server) hotStateless(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || !hotHeaders(r) {
			next.ServeHTTP(w, r)
			return
		}
		limit := s.opts.Limits.MaxBodyBytes
		body, err := bufferBody(r, limit)
		if err != nil || int64(len(body)) > limit {
			// The SDK says what it says of a body too large or cut short.
			next.ServeHTTP(w, r)
			return
		}
		id, p, ok := s.plainStatelessCall(r.Header, body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		s.hotTaken.Add(1)
		req := &mcp.CallToolRequest{
			Params: &mcp.CallToolParamsRaw{Meta: p.Meta, Name: p.Name, Arguments: p.Arguments},
			Extra:  &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header},
		}
		result, err := s.newProtocolResult(s.refuseUnknown(s.handleCall)(r.Context(), "tools/call", req))
		if werr := writeHotAnswer(w, id, result, err); werr != nil && ignoreClosed(werr) != nil {
			s.log.Warn("answering a tools/call", "tool", p.Name, "error", werr)
		}
	})
}

// hotHeaders checks what the SDK checks of a request's headers before its
// body: the ones a plain tools/call of 2026-07-28 carries.
func hotHeaders(r *http.Request) bool {
	h := r.Header
	if h.Get(protocolHeader) != newProtocol || h.Get("Mcp-Method") != "tools/call" || h.Get("Mcp-Name") == "" ||
		len(h.Values("Last-Event-ID")) > 0 {
		return false
	}
	for k := range h {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if jsonOK, streamOK := accepts(h.Values("Accept")); !jsonOK || !streamOK {
		return false
	}
	// The SDK refuses a loopback listener's request whose Host is not a
	// loopback name (DNS rebinding): such a request is its to refuse.
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil && loopback(local.String()) && !loopback(r.Host) {
		return false
	}
	return true
}

// accepts is the SDK's reading of Accept headers (streamableAccepts).
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// loopback says whether addr (host or host:port) names this machine: a
// loopback IP or localhost. Anything it cannot read is not.
func loopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// plainStatelessCall decodes body as a plain tools/call of the sessionless
// protocol whose _meta and headers the SDK would accept; ok is false for
// anything to leave to the SDK.
func (s *Server) plainStatelessCall(h http.Header, body []byte) (jsonrpc.ID, *hotParams, bool) {
	id, p, ok := decodeHotCall(body)
	if !ok || p.Name != h.Get("Mcp-Name") {
		return jsonrpc.ID{}, nil, false
	}
	if !newMetaOK(p.Meta) {
		return jsonrpc.ID{}, nil, false
	}
	if _, ok := p.Meta["progressToken"]; ok {
		// Progress goes to a session, and a stateless request has none.
		return jsonrpc.ID{}, nil, false
	}
	if m := s.served.Load(); m != nil && (*m)[p.Name] {
		// Arguments the client must repeat in headers: the SDK checks them.
		return jsonrpc.ID{}, nil, false
	}
	return id, p, true
}

// writeHotAnswer writes the answer to a call as the SDK's stateless
// handler does: one server-sent event, or, for the protocol errors the
// 2026-07-28 protocol gives an HTTP status, that status and the response
// alone as JSON.
func writeHotAnswer(w http.ResponseWriter, id jsonrpc.ID, result json.RawMessage, err error) error {
	data, eerr := hotResponse(id, result, err)
	if eerr != nil {
		return eerr
	}
	// The SDK sets the stream's headers before it knows the answer; an
	// error with a status of its own changes only the Content-Type.
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Connection", "keep-alive")
	if status := errorStatus(err); status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, werr := w.Write(data)
		return werr
	}
	w.Header().Set("Content-Type", "text/event-stream")
	out := make([]byte, 0, len("event: message\ndata: \n\n")+len(data))
	out = append(out, "event: message\ndata: "...)
	out = append(append(out, data...), "\n\n"...)
	_, werr := w.Write(out)
	return werr
}

// errorStatus is the HTTP status the SDK gives a protocol error of the
// 2026-07-28 protocol (extractErrorStatus), 0 for none.
func errorStatus(err error) int {
	var jerr *jsonrpc.Error
	if err == nil || !errors.As(err, &jerr) {
		return 0
	}
	switch jerr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}
