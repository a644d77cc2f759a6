package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/tokenexchange"
)

// A tools/call runs the pipeline call in a goroutine of its own, because the
// call may have to outlive the request: with the input-required flow the
// handler returns the question and the client's retry, a new request, picks
// the waiting call up again. The handler that serves a call (the first
// request, then each retry) waits for its result, its question or its own
// cancellation, which cancels the call.

// session is one MCP session as a caller of the pipeline.
type session struct {
	caller  string
	release func()
	// ctx ends with the session: every call of the session derives from it.
	// A context kept in a struct, deliberately (STYLE says not to): a call
	// can outlive the request that started it (see above), so its lifetime
	// is the session's, which no request's ctx carries.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	parked map[string]*parked // requestState → a call waiting for the client's answer
}

// parked is a call whose question was returned to the client.
type parked struct {
	c      *call
	expire *time.Timer
}

// call is one pipeline call in flight.
type call struct {
	tool string
	// req is the request that started the call; its client capabilities
	// are read only when the call asks (they are costly to decode).
	req    *mcp.CallToolRequest
	cancel context.CancelFunc
	// questions carries the approver's question to the handler serving the
	// call; answers carries the answer back (buffered: the approver may
	// have given up by then).
	questions chan host.Question
	answers   chan answer
	done      chan struct{} // closed once result is set
	result    pipeline.Result
	// waiting says the call is held for an approval route's approvers.
	waiting chan host.Waiting
	// elicits carries a plugin's question for a 2026-07-28 client to the
	// handler serving the call (inputrequired.go).
	elicits chan elicitQ

	// serving is the context of the request whose handler waits for the
	// call now, nil between requests: a plugin's question is sent in
	// relation to it (elicit.go), on that request's stream over HTTP.
	smu     sync.Mutex
	serving context.Context
	// pending is the plugin's question a parked call waits to have
	// answered, nil when it waits for an Ask's answer (or nothing).
	pending *elicitQ
}

type answer struct {
	approved bool
	err      error
}

type callKey struct{}

var errClosed = errors.New("the MCP server is shutting down")

// session returns the caller for ss, registering it with the host's
// approvals on its first call; it is released when the session ends.
func (s *Server) session(ss *mcp.ServerSession) (*session, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if sess, ok := s.sessions[ss]; ok {
		return sess, nil
	}
	sess := s.newSession(ss)
	s.sessions[ss] = sess
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = ss.Wait()
		s.endSession(ss)
	}()
	s.log.Debug("session", "caller", sess.caller, "id", ss.ID())
	return sess, nil
}

// newSession makes the caller of session ss (nil for a request the HTTP hot
// path serves, whose session is the request), registered with the host's
// approvals.
func (s *Server) newSession(ss *mcp.ServerSession) *session {
	sess := &session{parked: map[string]*parked{}}
	sess.ctx, sess.cancel = context.WithCancel(s.base)
	sess.caller, sess.release = s.h.Approvals.Caller(CallerPrefix, func(ctx context.Context, q host.Question) (bool, error) {
		return s.ask(ctx, sess, q)
	})
	// A plugin's questions during the session's calls go to its client.
	releaseCaller, releaseElicitor := sess.release, s.h.Approvals.SetElicitor(sess.caller, elicitor(ss))
	sess.release = func() { releaseElicitor(); releaseCaller() }
	return sess
}

// endSession cancels the session's calls, drops its parked questions and
// releases its caller name.
func (s *Server) endSession(ss *mcp.ServerSession) {
	s.smu.Lock()
	sess, ok := s.sessions[ss]
	delete(s.sessions, ss)
	s.smu.Unlock()
	if ok {
		sess.end()
	}
}

// requestSession is the caller of one request the HTTP hot path serves,
// ended (end) with the request.
func (s *Server) requestSession() (*session, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	return s.newSession(nil), nil
}

// end cancels the session's calls, drops its parked questions and releases
// its caller name.
func (sess *session) end() {
	sess.cancel()
	sess.mu.Lock()
	for state, p := range sess.parked {
		p.expire.Stop()
		delete(sess.parked, state)
	}
	sess.mu.Unlock()
	sess.release()
}

// ask is the session's Asker: it hands the question to the handler serving
// the call, which puts it to the client's user, and waits for the answer.
func (s *Server) ask(ctx context.Context, sess *session, q host.Question) (bool, error) {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil || !canElicit(c.req.ClientCapabilities()) {
		return false, fmt.Errorf("%w (caller %s has no elicitation)", host.ErrCannotAsk, sess.caller)
	}
	select {
	case c.questions <- q:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	select {
	case a := <-c.answers:
		return a.approved, a.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// callTool is the handler of every tool.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Session == nil {
		// Served by the HTTP hot path: the request is the whole session,
		// as the SDK's own session of a stateless request is.
		sess, err := s.requestSession()
		if err != nil {
			return nil, err
		}
		defer sess.end()
		return s.callStateless(ctx, sess, req)
	}
	sess, err := s.session(req.Session)
	if err != nil {
		return nil, err
	}
	if stateless(req) {
		return s.callStateless(ctx, sess, req)
	}
	var c *call
	if state := req.Params.RequestState; state != "" {
		// A retry after an input-required result: it carries the answer.
		c = sess.unpark(state)
		if c == nil || c.tool != req.Params.Name {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState names no call waiting for an answer (it expired or was answered)"}
		}
		c.respond(req.Params.InputResponses)
	} else if c, err = s.start(sess, req); err != nil {
		return nil, err
	}
	return s.serve(ctx, sess, req, c)
}

// start runs the call in its own goroutine, as the session's caller.
func (s *Server) start(sess *session, req *mcp.CallToolRequest) (*call, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	parent := sess.ctx
	if stateless(req) {
		// A stateless request's session ends with it, but a call waiting
		// for a route's approvers outlives it (routedwait.go); the handler
		// cancels the call itself when its request ends otherwise.
		parent = s.base
	}
	ctx, cancel := context.WithCancel(parent)
	c := &call{
		tool:      req.Params.Name,
		req:       req,
		cancel:    cancel,
		questions: make(chan host.Question),
		answers:   make(chan answer, 1),
		done:      make(chan struct{}),
		waiting:   make(chan host.Waiting, 1),
		elicits:   make(chan elicitQ),
	}
	ctx = context.WithValue(withClientTrace(ctx, req.Params.Meta), callKey{}, c)
	ctx = pipeline.WithVisibleOnly(pipeline.WithPrincipal(ctx, s.principal(req)))
	ctx = host.WithWaitNotice(ctx, func(w host.Waiting) {
		select {
		case c.waiting <- w:
		default:
		}
	})
	if req.Extra != nil && req.Extra.Header != nil {
		// The principal's own token, for the host alone to exchange for an
		// upstream's (never part of the call a stage sees).
		ctx = tokenexchange.WithSubjectToken(ctx, authn.SubjectTokenOf(req.Extra.TokenInfo))
	}
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		c.result = s.h.Call(ctx, c.tool, args, sess.caller)
		close(c.done)
	}()
	return c, nil
}

// principal is who a call is made for: over HTTP, whom the request's
// credential names (nobody without authentication); otherwise the session
// is the stdio one of whoever started the host.
func (s *Server) principal(req *mcp.CallToolRequest) pipeline.Principal {
	if req.Extra == nil || req.Extra.Header == nil {
		return s.opts.Principal
	}
	p, _ := authn.PrincipalOf(req.Extra.TokenInfo)
	return p
}

// withClientTrace puts the W3C trace context a client sent in the call's
// _meta (traceparent, tracestate) in ctx, so that the call's span, when the
// host traces, joins the client's trace and follows its sampling decision.
func withClientTrace(ctx context.Context, meta mcp.Meta) context.Context {
	parent, ok := meta["traceparent"].(string)
	if !ok {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": parent}
	if state, ok := meta["tracestate"].(string); ok {
		carrier["tracestate"] = state
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// answer hands the client's answer to the approver; one that already gave
// up (approval timeout) has no use for it.
func (c *call) answer(a answer) {
	select {
	case c.answers <- a:
	default:
	}
}

// serve waits for the call's result or its question, and ends the call when
// the request is cancelled. A legacy session's question is put to the
// client here, while the call waits; the wait for the user's answer also
// ends when the call does (the approval timed out) or the request does.
func (s *Server) serve(ctx context.Context, sess *session, req *mcp.CallToolRequest, c *call) (*mcp.CallToolResult, error) {
	var (
		asked      chan answer // the elicitation in progress, nil when none
		stopAsking = func() {}
	)
	var wait *held // progress while an approval route holds the call
	c.serveFrom(ctx)
	defer c.servedFrom()
	defer func() {
		stopAsking()
		if asked != nil {
			<-asked
		}
		wait.stop()
	}()
	for {
		select {
		case <-c.done:
			return toolResult(c.result), nil
		case w := <-c.waiting:
			wait = hold(ctx, req, w)
		case <-wait.ticks():
			wait.notify(ctx, req)
		case q := <-c.questions:
			if !legacy(req.Session) {
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{approvalInput: approvalRequest(q)},
					RequestState:  sess.park(c, s.parkFor),
				}, nil
			}
			asked, stopAsking = startElicit(ctx, req.Session, q)
		case q := <-c.elicits:
			// Only a client of 2026-07-28 is handed a plugin's question
			// (an older one is sent elicitation/create by elicitor).
			c.parkElicit(&q)
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{elicitInput: q.params},
				RequestState:  sess.park(c, s.parkFor),
			}, nil
		case a := <-asked:
			asked = nil
			stopAsking()
			if a.err != nil {
				awaitCancel(ctx)
			}
			if ctx.Err() == nil {
				// Cancelled while the user was asked, the call is
				// ABORTED by the case below, not refused.
				c.answer(a)
			}
		case <-ctx.Done():
			// The client gave up on the request and will not read a
			// result; the call ends ABORTED (stage 5 sees it) on its own.
			c.cancel()
			return nil, ctx.Err()
		}
	}
}

// cancelGrace bounds how long a failed elicitation waits for the
// request's cancellation.
const cancelGrace = 2 * time.Second

// awaitCancel waits a moment for ctx to end. An elicitation that failed
// rather than being answered most often failed because the client gave up
// on the request; over HTTP the client's cancellation of the call travels
// on a request of its own and can arrive just after the failure. Without
// the wait a call the client cancelled would be recorded DENIED, not
// ABORTED.
func awaitCancel(ctx context.Context) {
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// park keeps c for the client's retry and returns the requestState that
// names it: 128 random bits, only meaningful to this session, so it needs
// no signature.
func (sess *session) park(c *call, ttl time.Duration) string {
	state := rand.Text()
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.parked[state] = &parked{c: c, expire: time.AfterFunc(ttl, func() { sess.unpark(state) })}
	return state
}

func (sess *session) unpark(state string) *call {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	p, ok := sess.parked[state]
	if !ok {
		return nil
	}
	p.expire.Stop()
	delete(sess.parked, state)
	return p.c
}

// toolResult is a pipeline result as MCP's: the value as text (a string
// as itself, anything else as JSON, an object also as structuredContent),
// or an error result whose text carries the code, the message and who
// decided. A value that is itself an MCP tool result's content (what the
// mcp bridge plugin returns) is served as that result.
func toolResult(r pipeline.Result) *mcp.CallToolResult {
	meta := mcp.Meta{"plugkit/id": r.ID}
	if rc := r.Receipt; rc != nil {
		// Where the audit recorded the call, for `audit prove`.
		meta["plugkit/receipt"] = map[string]any{"plugin": rc.Plugin, "seq": rc.Seq, "hash": rc.Hash}
	}
	if r.OK {
		value := r.JSONValue()
		if res, ok := mcpShaped(value); ok {
			res.Meta = meta
			return res
		}
		text := string(value)
		var str string
		if json.Unmarshal(value, &str) == nil {
			text = str
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, Meta: meta}
		if v := bytes.TrimSpace(value); len(v) > 0 && v[0] == '{' {
			res.StructuredContent = value
		}
		return res
	}
	code, message := string(pipeline.CodeToolError), "the call failed without saying why"
	if r.Error != nil {
		code, message = string(r.Error.Code), r.Error.Message
	}
	line := code + ": " + message
	if r.DecidedBy != "" {
		line += " (decided by " + r.DecidedBy + ")"
	}
	meta["plugkit/code"] = code
	if r.DecidedBy != "" {
		meta["plugkit/decided_by"] = r.DecidedBy
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: line}}, Meta: meta}
}

// mcpShaped reads a value of the shape {"content": [MCP content blocks],
// "structuredContent": any}, with nothing else and structuredContent
// optional: the value of a tool bridged from an MCP server, which is then
// served as the server returned it rather than as JSON text.
func mcpShaped(v json.RawMessage) (*mcp.CallToolResult, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	shaped, known := shapedMembers(v)
	if !known {
		shaped = shapedByMap(v)
	}
	if !shaped {
		return nil, false
	}
	var res mcp.CallToolResult
	if json.Unmarshal(v, &res) != nil || res.IsError {
		return nil, false
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return &res, true
}
