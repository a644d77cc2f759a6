package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/pipeline"
)

// What a session sees is what its principal may call. The SDK keeps one
// tool list for every session; three hooks make it per session:
//
//   - tools/list (a receiving middleware) answers the SDK's page with the
//     tools hidden from the request's principal taken out
//     (pipeline.Tools.VisibleSet, cached per principal class), marked
//     cacheScope "private" so that no shared cache serves it to another
//     caller; pagination is the SDK's, over the whole list, so a page may
//     hold fewer tools than the page size (or none) and still name the
//     next;
//   - notifications/tools/list_changed (a sending middleware) reaches a
//     session only when the tools it sees changed since it was last told
//     or last listed them (the tools a list holds: a change of a prompt's
//     or a resource entry's visibility alone is not one): the SDK sends one to every session whenever a
//     tool is added or removed, and a change of rules alone makes none, so
//     recheck, after each sync, asks the SDK for one (re-adding a listed
//     tool) when some session's set changed; the same for
//     notifications/prompts/list_changed and the prompts a session lists
//     (offerings_visible.go), re-adding a prompt;
//   - tools/call of a hidden tool is refused as one of a tool that does
//     not exist (refuseUnknown, and pipeline.WithVisibleOnly on the call).

// views is what each session was last shown.
type views struct {
	mu sync.Mutex
	by map[*mcp.ServerSession]*view
}

// view is one session's: its principal and the set it last saw (listed,
// or was told had changed).
type view struct {
	principal pipeline.Principal
	seen      *pipeline.VisibleSet
	// prompts is the set as of its last prompts/list or prompts
	// notification; nil until it lists prompts.
	prompts *pipeline.VisibleSet
}

// principalOfExtra is who a request is for: over HTTP, whom its credential
// names (nobody without authentication); otherwise the stdio session's
// principal. It is Server.principal for any request.
func (s *Server) principalOfExtra(extra *mcp.RequestExtra) pipeline.Principal {
	if extra == nil || extra.Header == nil {
		return s.opts.Principal
	}
	p, _ := authn.PrincipalOf(extra.TokenInfo)
	return p
}

// visibleTo is the set of tools shown to p.
func (s *Server) visibleTo(ctx context.Context, p pipeline.Principal) *pipeline.VisibleSet {
	return s.h.Pipeline().VisibleSet(ctx, p)
}

// hiddenFrom reports whether the registered tool name is hidden from the
// principal of a request with extra.
func (s *Server) hiddenFrom(ctx context.Context, extra *mcp.RequestExtra, name string) bool {
	return !s.visibleTo(ctx, s.principalOfExtra(extra)).Has(name)
}

// listVisible is the receiving middleware of tools/list.
func (s *Server) listVisible(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" {
			return next(ctx, method, req)
		}
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		p := s.principalOfExtra(req.GetExtra())
		set := s.visibleTo(ctx, p)
		shown := make([]*mcp.Tool, 0, len(lr.Tools))
		for _, t := range lr.Tools {
			if set.Has(t.Name) {
				shown = append(shown, t)
			}
		}
		// A copy: the SDK's result may share its slices with the next
		// request's.
		out := *lr
		out.Tools = shown
		out.CacheScope = "private"
		if s.searching() {
			cursor := ""
			if lr, ok := req.(*mcp.ListToolsRequest); ok && lr.Params != nil {
				cursor = lr.Params.Cursor
			}
			s.searchList(&out, cursor, set)
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			s.saw(ss, p, set)
		}
		return &out, nil
	}
}

// saw notes that session ss, for p, was shown set.
func (s *Server) saw(ss *mcp.ServerSession, p pipeline.Principal, set *pipeline.VisibleSet) {
	s.views.mu.Lock()
	defer s.views.mu.Unlock()
	v := s.viewOf(ss)
	v.principal, v.seen = p, set
}

// sawPrompts notes that session ss, for p, was shown the prompts of set.
func (s *Server) sawPrompts(ss *mcp.ServerSession, p pipeline.Principal, set *pipeline.VisibleSet) {
	s.views.mu.Lock()
	defer s.views.mu.Unlock()
	v := s.viewOf(ss)
	v.principal, v.prompts = p, set
}

// viewOf is the view of ss, made on first use; views.mu is held.
func (s *Server) viewOf(ss *mcp.ServerSession) *view {
	if s.views.by == nil {
		s.views.by = map[*mcp.ServerSession]*view{}
	}
	v, ok := s.views.by[ss]
	if !ok {
		v = &view{}
		s.views.by[ss] = v
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = ss.Wait()
			s.views.mu.Lock()
			delete(s.views.by, ss)
			s.views.mu.Unlock()
		}()
	}
	return v
}

// notifyChanged is the sending middleware that keeps a tools/list_changed
// notification from a session whose set did not change.
func (s *Server) notifyChanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		prompts := method == "notifications/prompts/list_changed"
		if method != "notifications/tools/list_changed" && !prompts {
			return next(ctx, method, req)
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok {
			return next(ctx, method, req)
		}
		s.views.mu.Lock()
		v := s.views.by[ss]
		var p pipeline.Principal
		var seen *pipeline.VisibleSet
		if v != nil {
			p, seen = v.principal, v.seen
			if prompts {
				seen = v.prompts
			}
		}
		s.views.mu.Unlock()
		if seen == nil {
			// A session that never listed them: its principal is not
			// known here, and being told costs it one list.
			return next(ctx, method, req)
		}
		cur := s.visibleTo(ctx, p)
		if (!prompts && cur.EqualTools(seen)) || (prompts && cur.EqualPrompts(seen)) {
			return nil, nil
		}
		s.views.mu.Lock()
		if prompts {
			v.prompts = cur
		} else {
			v.seen = cur
		}
		s.views.mu.Unlock()
		return next(ctx, method, req)
	}
}

// recheck asks the SDK for a tools/list_changed notification when the
// tools some session is shown changed without a tool being added or
// removed (a rule or a plugin changed), and for a prompts/list_changed one
// when its prompts did; notifyChanged then lets each through to those
// sessions only. It runs in the follow loop, after sync.
func (s *Server) recheck() {
	s.views.mu.Lock()
	type seen struct {
		p            pipeline.Principal
		set, prompts *pipeline.VisibleSet
	}
	all := make([]seen, 0, len(s.views.by))
	for _, v := range s.views.by {
		all = append(all, seen{v.principal, v.seen, v.prompts})
	}
	s.views.mu.Unlock()
	tools, prompts := false, false
	for _, v := range all {
		cur := s.visibleTo(s.base, v.p)
		tools = tools || (v.set != nil && !cur.EqualTools(v.set))
		prompts = prompts || (v.prompts != nil && !cur.EqualPrompts(v.prompts))
	}
	if prompts {
		for _, t := range s.prompts {
			// As for tools below: the SDK notifies every session of
			// prompts/list_changed, which notifyChanged filters.
			s.mcp.AddPrompt(mcpPrompt(t), s.getPrompt)
			break
		}
	}
	if !tools {
		return
	}
	for _, t := range s.listed {
		// Re-adding a tool as it is changes nothing a client sees but
		// makes the SDK notify (debounced) every session.
		if tool, err := mcpTool(t); err == nil && s.addTool(tool) == nil {
			return
		}
	}
}
