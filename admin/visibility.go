package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/identity"
)

// GET /v1/tools?as=KIND:ID[&attribute=key:value...] lists only the tools
// shown to that principal, as its MCP tools/list does (held tools, which
// no agent is shown, are left out too). Only the host's own user reaches
// this socket: the operator may ask what anyone would be shown.

// visibleFilter is the filter the request asks for: nil without as, else
// whether a tool (its name and held reason) is shown to the principal.
func (s *Server) visibleFilter(r *http.Request) (func(name, held string) bool, error) {
	q := r.URL.Query()
	as, attrs := q.Get("as"), q["attribute"]
	if as == "" {
		if len(attrs) > 0 {
			return nil, fmt.Errorf("tools: attribute without as: name the principal, as=KIND:ID")
		}
		return nil, nil
	}
	p, err := principalParam(as, attrs)
	if err != nil {
		return nil, fmt.Errorf("tools: as: %w", err)
	}
	set := s.c.Host.Pipeline().VisibleSet(r.Context(), p)
	return func(name, held string) bool { return held == "" && set.Has(name) }, nil
}

// principalParam reads KIND:ID and its key:value attributes.
func principalParam(as string, attrs []string) (pipeline.Principal, error) {
	kind, id, ok := strings.Cut(as, ":")
	if !ok || kind == "" || id == "" {
		return pipeline.Principal{}, fmt.Errorf("%q is not KIND:ID (user:alice, agent:ci, local:root)", as)
	}
	switch kind {
	case identity.KindUser, identity.KindAgent, identity.KindService, identity.KindLocal:
	default:
		return pipeline.Principal{}, fmt.Errorf("%q: kind %q is not one of user, agent, service, local", as, kind)
	}
	if len(attrs) > identity.MaxAttributes {
		return pipeline.Principal{}, fmt.Errorf("%d attributes, over the limit of %d", len(attrs), identity.MaxAttributes)
	}
	for _, a := range attrs {
		if k, v, ok := strings.Cut(a, ":"); !ok || k == "" || v == "" {
			return pipeline.Principal{}, fmt.Errorf("attribute %q is not key:value (group:readers)", a)
		}
	}
	return pipeline.Principal{ID: id, Kind: kind, Attributes: attrs}, nil
}

// ToolsAs returns the tools shown to the principal as (KIND:ID) with
// attributes, as its MCP tools/list would.
func (c *Client) ToolsAs(ctx context.Context, as string, attributes []string) ([]Tool, error) {
	q := url.Values{"as": {as}}
	for _, a := range attributes {
		q.Add("attribute", a)
	}
	var t []Tool
	err := c.get(ctx, "/v1/tools?"+q.Encode(), &t)
	return t, err
}
