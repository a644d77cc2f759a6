package sdk

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// RegisterTools offers many tools and disposes replace (handles of tools
// this plugin registered) in one step: one RPC, one compile of the host's
// registry, and no moment when a call finds some of the change and not the
// rest. Each tool is accepted or refused on its own: for a refused one
// handles[i] is nil and errs[i] says why (errs is nil when all were
// accepted). err means nothing was registered (the host could not be
// reached, a handle to replace is unknown to it).
//
// A batch larger than half the message limit goes in several requests,
// each atomic on its own (the disposals go with the first). With a host
// that predates RegisterTools, replace is disposed and the tools are
// registered one by one.
func (p *Context) RegisterTools(ctx context.Context, tools []Tool, replace []*Handle) (handles []*Handle, errs []error, err error) {
	host, err := p.srv.hostClient()
	if err != nil {
		return nil, nil, err
	}
	handles = make([]*Handle, len(tools))
	setErr := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(tools))
		}
		errs[i] = err
	}
	items := make([]*pb.RegisterToolRequest, len(tools))
	ids := make([]string, len(tools)) // handler ids, "" for a tool refused here
	for i, t := range tools {
		params, err := checkTool(t)
		if err != nil {
			setErr(i, err)
			continue
		}
		ids[i] = p.srv.reg.newID("tool")
		items[i] = &pb.RegisterToolRequest{HandlerId: ids[i], Tool: wire.ToolDescriptorToProto(descriptorOf(t, params))}
		// Stored before the request, as register does: the host may
		// route a call to it before the answer arrives.
		p.srv.reg.tools.put(ids[i], t)
	}
	var disposals []string
	var live []*Handle
	for _, h := range replace {
		if h == nil {
			continue
		}
		h.mu.Lock()
		gone := h.disposed || h.srv.generation.Load() != h.gen
		h.mu.Unlock()
		if !gone {
			disposals = append(disposals, h.id)
			live = append(live, h)
		}
	}
	forget := func(from int) {
		for i := from; i < len(ids); i++ {
			if ids[i] != "" {
				p.srv.reg.tools.remove(ids[i])
			}
		}
	}
	for _, chunk := range chunks(items, p.srv.maxBytes/2) {
		req := &pb.RegisterToolsRequest{DisposeRegistrationIds: disposals}
		for _, i := range chunk {
			req.Tools = append(req.Tools, items[i])
		}
		resp, err := host.RegisterTools(ctx, req)
		if status.Code(err) == codes.Unimplemented {
			return p.registerToolsOneByOne(ctx, tools, items, ids, live, handles, errs)
		}
		if err != nil {
			if len(chunk) > 0 {
				forget(chunk[0])
			}
			return nil, nil, fmt.Errorf("register tools: %w", hostError(ctx, err))
		}
		if disposals != nil {
			for _, h := range live {
				h.spent()
			}
			disposals, live = nil, nil
		}
		for k, i := range chunk {
			var r *pb.RegisterToolsResult
			if k < len(resp.GetResults()) {
				r = resp.GetResults()[k]
			}
			if r.GetRegistrationId() == "" {
				p.srv.reg.tools.remove(ids[i])
				setErr(i, fmt.Errorf("register %s: %s", named("tool", tools[i].Name), r.GetError()))
				continue
			}
			id := ids[i]
			handles[i] = newHandle(p.srv, r.GetRegistrationId(), func() { p.srv.reg.tools.remove(id) })
		}
	}
	return handles, errs, nil
}

// registerToolsOneByOne is RegisterTools with a host that predates it.
func (p *Context) registerToolsOneByOne(ctx context.Context, tools []Tool, items []*pb.RegisterToolRequest, ids []string, replace, handles []*Handle, errs []error) ([]*Handle, []error, error) {
	for _, h := range replace {
		if err := h.Dispose(ctx); err != nil {
			return nil, nil, err
		}
	}
	host, err := p.srv.hostClient()
	if err != nil {
		return nil, nil, err
	}
	for i, item := range items {
		if item == nil {
			continue
		}
		resp, err := host.RegisterTool(ctx, item)
		if err != nil {
			p.srv.reg.tools.remove(ids[i])
			if errs == nil {
				errs = make([]error, len(tools))
			}
			errs[i] = fmt.Errorf("register %s: %w", named("tool", tools[i].Name), hostError(ctx, err))
			continue
		}
		id := ids[i]
		handles[i] = newHandle(p.srv, resp.GetRegistrationId(), func() { p.srv.reg.tools.remove(id) })
	}
	return handles, errs, nil
}

// chunks splits the indexes of the non-nil items into runs whose encoded
// size stays under limit (one item alone may pass it: the host's own limit
// then refuses it with a message that names it).
func chunks(items []*pb.RegisterToolRequest, limit int) [][]int {
	var out [][]int
	var cur []int
	size := 0
	for i, it := range items {
		if it == nil {
			continue
		}
		n := proto.Size(it) + 8
		if len(cur) > 0 && limit > 0 && size+n > limit {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, i)
		size += n
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}
