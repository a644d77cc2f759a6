package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
)

// Over streamable HTTP the two eras of the protocol share one endpoint. A
// request whose Mcp-Protocol-Version header is 2026-07-28 or later speaks
// the sessionless protocol (server/discover, then each request on its
// own, its version and capabilities in _meta): it goes to the SDK's
// stateless handler, which serves it with a session of its own that ends
// with the request. Any other request (initialize, or one carrying an
// Mcp-Session-Id) goes to the session-keeping handler behind the session
// cap, as before. Nothing of a stateless request outlives it; an Ask, and
// a plugin's question (inputrequired.go), is answered through a sealed
// requestState (sealed.go) that any replica holding the key opens.

// newProtocol is the first protocol version served without sessions.
const newProtocol = "2026-07-28"

// protocolHeader carries a streamable HTTP request's protocol version.
const protocolHeader = "Mcp-Protocol-Version"

// byEra sends a request of the sessionless protocol to stateless and any
// other to sessions.
func byEra(stateless, sessions http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get(protocolHeader); v >= newProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// statelessOptions are the SDK handler's for the sessionless protocol: a
// request's cancellation (its connection closing) cancels its call.
func (s *Server) statelessOptions() *mcp.StreamableHTTPOptions {
	return &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		Logger:                       newSlog(s.log.Named("http")),
		MaxRequestBodyBytes:          s.opts.Limits.MaxBodyBytes,
	}
}

// stateless says whether req came over HTTP without a session: the
// 2026-07-28 protocol, whose session lasts one request (none at all when
// the HTTP hot path serves it, hothttp.go).
func stateless(req *mcp.CallToolRequest) bool {
	return (req.Session == nil || req.Session.ID() == "") && req.Extra != nil && req.Extra.Header != nil
}

// callStateless serves a tools/call without a session. A retry
// (requestState set) is checked against its sealed question, then the call
// runs again from the start with the client's answers ready for the
// questions they answer (the one the state names, and those of earlier
// rounds it carries): the call that asked ended when its request did, on
// whichever replica it ran.
func (s *Server) callStateless(ctx context.Context, sess *session, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var pre preanswers
	if state := req.Params.RequestState; state != "" {
		now := time.Now()
		a, err := s.sealer.open(state, now)
		if err == nil && (a.Principal != s.principal(req).String() || a.Tool != req.Params.Name ||
			a.Args != digest(canonicalArgs(req.Params.Arguments))) {
			err = errState
		}
		if err == nil && !s.sealer.spend(a, now) {
			err = errState
		}
		if err == nil && a.Input == waitInput {
			return s.resume(ctx, req, a)
		}
		if err == nil {
			pre, err = retryAnswers(a, req.Params.InputResponses)
		}
		if err != nil {
			s.log.Warn("refused a retry's requestState", "tool", req.Params.Name, "for", s.principal(req).String())
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		s.log.Debug("retry answers an earlier call's question", "asked_by", a.Call, "tool", a.Tool)
	}
	c, err := s.start(sess, req)
	if err != nil {
		return nil, err
	}
	var given []carried // the answers used in this run, for a next round
	var wait *held      // progress while a route's approvers decide
	defer func() { wait.stop() }()
	for {
		var (
			input    string
			request  mcp.InputRequest
			question string
			callID   string
		)
		select {
		case <-c.done:
			return toolResult(c.result), nil
		case q := <-c.questions:
			if a, ok := pre.approval(q); ok {
				// The question the client answered: answered once.
				given = append(given, a)
				c.answer(answer{approved: a.Approved, err: a.err()})
				continue
			}
			input, request, question, callID = approvalInput, approvalRequest(q), questionDigest(q), q.ID
		case q := <-c.elicits:
			if a, ok := pre.elicit(q.params); ok {
				given = append(given, a)
				q.reply <- a.elicitResult()
				continue
			}
			input, request, question = elicitInput, q.params, elicitDigest(q.params)
			q.reply <- nil
		case w := <-c.waiting:
			if entry, _ := ctx.Value(entryCallKey{}).(bool); entry {
				// A resources or prompts request waits with its call.
				wait = hold(ctx, req, w)
				continue
			}
			// The call waits for a route's approvers apart from this
			// request, which says to come back (routedwait.go).
			return s.comeBack(req, s.detach(c, w), w), nil
		case <-wait.ticks():
			wait.notify(ctx, req)
			continue
		case <-ctx.Done():
			c.cancel()
			return nil, ctx.Err()
		}
		// Asked anew: the question goes back sealed, with the answers
		// given so far, and this call ends (ABORTED); the retry runs it
		// again.
		state := s.sealer.seal(sealedAsk{
			Principal: s.principal(req).String(),
			Tool:      req.Params.Name,
			Args:      digest(canonicalArgs(req.Params.Arguments)),
			Question:  question,
			Input:     input,
			Answers:   given,
			Call:      callID,
			Expires:   time.Now().Add(s.askFor).UnixMilli(),
		})
		c.cancel()
		<-c.done
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{input: request},
			RequestState:  state,
		}, nil
	}
}

// questionDigest is what identifies a question across replicas: the tool
// and arguments it is about, and what it asks.
func questionDigest(q host.Question) string {
	return digest(q.Tool, canonicalArgs([]byte(q.Arguments)), q.Question, q.For)
}

// UseStateKeys makes the server seal requestStates with keys[0] and accept
// those sealed with any of keys (each StateKeyBytes long), from now on; it
// may be called again (a reload). Replicas given the same keys accept each
// other's; without any, each accepts only its own. On an error the keys in
// use stay.
func (s *Server) UseStateKeys(keys [][]byte) error {
	return s.sealer.setKeys(keys)
}

// listens says whether r, a POST of the sessionless protocol, is a
// subscriptions/listen request: a stream held open for notifications that
// answers no call. The body read is put back for the handler; one larger
// than the body limit is left for the SDK to refuse.
func (s *Server) listens(r *http.Request) bool {
	if r.Body == nil {
		return false
	}
	limit := s.opts.Limits.MaxBodyBytes
	read, err := bufferBody(r, limit)
	if err != nil || int64(len(read)) > limit {
		return false
	}
	if !bytes.Contains(read, []byte("listen")) && !bytes.Contains(read, []byte(`\u`)) {
		// Not a listen however it is spelled (a member name or method can
		// only escape a letter with \u): no need to decode it all.
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(read, &msg) == nil && msg.Method == "subscriptions/listen"
}
