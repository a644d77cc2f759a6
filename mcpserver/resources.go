package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/pipeline"
)

// Resources and prompts of bridged servers are entries of the registry with
// a kind (pipeline.ToolInfo.Kind): each list, read and get is a pipeline
// call of such an entry, made as the client's session, so it passes the
// five stages and is audited like a tool call.
//
// URIs are mapped so that two servers' URIs never collide and each stays
// resolvable: the client sees
//
//	plugkit://PLUGIN/URI
//
// where PLUGIN is the bridge plugin's name in the deployment and URI the
// server's own URI, verbatim (a template's braces included). A read of such
// a URI is a call of PLUGIN's reader with {"uri": URI}; rules match the
// server's own URI.
//
// Prompts are served under the name of their entry (PREFIX_prompts.NAME),
// which the SDK lists; a prompts/get is a call of that entry.

// URIScheme starts every resource URI the front end serves.
const URIScheme = "plugkit://"

// The kinds of entries (the bridge's ToolDescriptor.kind).
const (
	kindResources = "resources"
	kindResource  = "resource"
	kindPrompt    = "prompt"
	kindSubscribe = "resource_subscribe"
)

// listTTL is the cache hint on list results: how long a client may use a
// list before asking again. It is what a client that gets no list_changed
// notification (2026-07-28 without a session) waits at most to learn of a
// change.
const listTTL = 30 * time.Second

// codeResourceNotFound is MCP's error for a URI no server has.
const codeResourceNotFound = -32002

// cacheHints is the SDK's SetCacheable: every list and read is private,
// since what a caller may list and read depends on who it is (rules,
// guards, visibility); lists may be kept for listTTL, a read not at all, so
// that every read passes the pipeline.
func cacheHints(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	c.CacheScope = "private"
	switch req.(type) {
	case *mcp.ReadResourceRequest:
		c.TTLMs = 0
	default:
		c.TTLMs = int(listTTL / time.Millisecond)
	}
}

// serveResources answers resources/list, resources/templates/list and
// resources/read from the registry's resource entries.
func (s *Server) serveResources(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/list":
			l, err := s.listResources(ctx, req)
			if err != nil {
				return nil, err
			}
			res := &mcp.ListResourcesResult{Resources: l.Resources}
			cacheHints(ctx, req, &res.Cacheable)
			return res, nil
		case "resources/templates/list":
			l, err := s.listResources(ctx, req)
			if err != nil {
				return nil, err
			}
			res := &mcp.ListResourceTemplatesResult{ResourceTemplates: l.Templates}
			cacheHints(ctx, req, &res.Cacheable)
			return res, nil
		case "resources/read":
			rr, ok := req.(*mcp.ReadResourceRequest)
			if !ok || rr.Params == nil {
				return next(ctx, method, req)
			}
			return s.readResource(ctx, rr)
		case "prompts/get":
			// A prompt held absent is not the SDK's, which would only say
			// it does not know it: say why it is held.
			if gr, ok := req.(*mcp.GetPromptRequest); ok && gr.Params != nil {
				if t, ok := s.h.Pipeline().Lookup(gr.Params.Name); ok && t.Kind == kindPrompt && t.Held != "" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %s is held absent: %s", t.Name, t.Held)}
				}
			}
		}
		return next(ctx, method, req)
	}
}

// resourceList is the value of a "resources" entry's call.
type resourceList struct {
	Resources []*mcp.Resource         `json:"resources"`
	Templates []*mcp.ResourceTemplate `json:"resourceTemplates"`
}

// listResources calls every server's list entry for the session, in the
// order of the plugins' names, and maps the URIs. A server whose list the
// pipeline refuses this caller (or that fails) contributes nothing.
func (s *Server) listResources(ctx context.Context, req mcp.Request) (*resourceList, error) {
	out := &resourceList{Resources: []*mcp.Resource{}, Templates: []*mcp.ResourceTemplate{}}
	entries := s.entries(kindResources)
	for _, e := range entries {
		if s.bridgeHidden(ctx, req, e.Owner, &e) {
			continue // offeringsVisible
		}
		res, err := s.callEntry(ctx, req, e.Name, json.RawMessage(`{}`))
		if err != nil {
			return nil, err
		}
		if res.IsError {
			s.log.Debug("resources of a server not listed", "plugin", e.Owner, "result", resultText(res))
			continue
		}
		var l resourceList
		if err := json.Unmarshal(structured(res), &l); err != nil {
			s.log.Warn("resources of a server not listed: its list is not one", "plugin", e.Owner, "error", err)
			continue
		}
		for _, r := range l.Resources {
			if r == nil {
				continue
			}
			c := *r
			c.URI = URIScheme + e.Owner + "/" + r.URI
			out.Resources = append(out.Resources, &c)
		}
		for _, t := range l.Templates {
			if t == nil {
				continue
			}
			c := *t
			c.URITemplate = URIScheme + e.Owner + "/" + t.URITemplate
			out.Templates = append(out.Templates, &c)
		}
	}
	return out, nil
}

// readResource reads a mapped URI through its server's reader entry.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	owner, uri, ok := splitURI(req.Params.URI)
	var reader *pipeline.ToolInfo
	if ok {
		for _, e := range s.entries(kindResource) {
			if e.Owner == owner {
				reader = &e
				break
			}
		}
	}
	if reader == nil || s.bridgeHidden(ctx, req, owner, nil) {
		return nil, &jsonrpc.Error{Code: codeResourceNotFound, Message: fmt.Sprintf("resource %s not found: resource URIs served here are %sPLUGIN/URI, PLUGIN a bridge that offers resources", req.Params.URI, URIScheme)}
	}
	args, _ := json.Marshal(map[string]string{"uri": uri})
	res, err := s.callEntry(ctx, req, reader.Name, args)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, refusal(res)
	}
	var rc struct {
		Contents []*mcp.ResourceContents `json:"contents"`
	}
	if err := json.Unmarshal(structured(res), &rc); err != nil {
		return nil, fmt.Errorf("resources/read %s: the server's contents cannot be read: %w", req.Params.URI, err)
	}
	for _, c := range rc.Contents {
		if c != nil {
			c.URI = URIScheme + owner + "/" + c.URI
		}
	}
	if rc.Contents == nil {
		rc.Contents = []*mcp.ResourceContents{}
	}
	out := &mcp.ReadResourceResult{Contents: rc.Contents, Meta: res.Meta}
	cacheHints(ctx, req, &out.Cacheable)
	return out, nil
}

// splitURI reads plugkit://PLUGIN/URI.
func splitURI(u string) (owner, uri string, ok bool) {
	rest, ok := strings.CutPrefix(u, URIScheme)
	if !ok {
		return "", "", false
	}
	owner, uri, ok = strings.Cut(rest, "/")
	return owner, uri, ok && owner != "" && uri != ""
}

// entries are the registry's entries of kind that are served (not held),
// by the name of their plugin.
func (s *Server) entries(kind string) []pipeline.ToolInfo {
	var out []pipeline.ToolInfo
	for _, t := range s.h.Tools() {
		if t.Kind == kind && t.Held == "" {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b pipeline.ToolInfo) int { return strings.Compare(a.Owner, b.Owner) })
	return out
}

// callEntry calls the entry name for the session of req, as a tools/call
// of it would be: the same caller, principal, approvals and trace. An
// approval asked of a client that takes questions through input-required
// results (2026-07-28) cannot be answered on a resources or prompts
// request: the call is withdrawn (ABORTED) and the request refused.
func (s *Server) callEntry(ctx context.Context, req mcp.Request, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	var meta mcp.Meta
	// A request without params (resources/list may have none) holds a nil
	// pointer of its params' type, whose GetMeta would panic.
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		if m, ok := p.GetMeta()["traceparent"]; ok {
			meta = mcp.Meta{"traceparent": m}
			if st, ok := p.GetMeta()["tracestate"]; ok {
				meta["tracestate"] = st
			}
		}
	}
	creq := &mcp.CallToolRequest{Session: ss, Extra: req.GetExtra(), Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args, Meta: meta}}
	res, err := s.callTool(context.WithValue(ctx, entryCallKey{}, true), creq)
	if err != nil {
		return nil, err
	}
	if res.RequestState != "" {
		if sess, err := s.session(ss); err == nil {
			if c := sess.unpark(res.RequestState); c != nil {
				c.cancel()
			}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: name + ": the call needs an answer (an approval, or a question of the server behind it), which this request cannot carry; ask through a tool or answer over a session (protocol 2025-11-25)"}
	}
	return res, nil
}

// structured is a successful call's value as JSON.
func structured(res *mcp.CallToolResult) json.RawMessage {
	if raw, ok := res.StructuredContent.(json.RawMessage); ok {
		return raw
	}
	b, _ := json.Marshal(res.StructuredContent)
	return b
}

func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return "the call failed without saying why"
}

// refusal is a failed call of an entry as a protocol error: the message is
// the call's ("DENIED: ... (decided by ...)"), the data its id, receipt and
// code.
func refusal(res *mcp.CallToolResult) error {
	e := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: resultText(res)}
	e.Data, _ = json.Marshal(res.Meta)
	return e
}

// subscribe is the SDK's SubscribeHandler: a call of the server's subscribe
// entry, so that a rule that denies reading a URI can deny following it
// too. The SDK records the subscription when it returns nil.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	owner, uri, ok := splitURI(req.Params.URI)
	var entry *pipeline.ToolInfo
	if ok {
		for _, e := range s.entries(kindSubscribe) {
			if e.Owner == owner {
				entry = &e
				break
			}
		}
	}
	if entry == nil || s.bridgeHidden(ctx, req, owner, nil) || s.hiddenFrom(ctx, req.Extra, entry.Name) {
		return &jsonrpc.Error{Code: codeResourceNotFound, Message: fmt.Sprintf("resource %s cannot be subscribed to: no bridge that offers resources and takes subscriptions serves it", req.Params.URI)}
	}
	args, _ := json.Marshal(map[string]string{"uri": uri})
	res, err := s.callEntry(ctx, req, entry.Name, args)
	if err != nil {
		return err
	}
	if res.IsError {
		return refusal(res)
	}
	return nil
}

// unsubscribe is the SDK's UnsubscribeHandler: the SDK forgets the
// session's subscription; the server's own stays (see the bridge).
func unsubscribe(context.Context, *mcp.UnsubscribeRequest) error { return nil }

// resourceUpdated tells the sessions subscribed to a plugin's resource that
// it changed, in the background (the host's event must not wait for them).
func (s *Server) resourceUpdated(u host.ResourceUpdate) {
	if u.ListChanged {
		s.resourcesChanged()
		return
	}
	s.smu.Lock()
	if s.closed {
		s.smu.Unlock()
		return
	}
	// Added under smu while not closed: Shutdown sets closed before it
	// waits for wg.
	s.wg.Add(1)
	s.smu.Unlock()
	go func() {
		defer s.wg.Done()
		_ = s.mcp.ResourceUpdated(s.base, &mcp.ResourceUpdatedNotificationParams{URI: URIScheme + u.Plugin + "/" + u.URI})
	}()
}
