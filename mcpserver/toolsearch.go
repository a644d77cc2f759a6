package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/pipeline"
)

// Tool search (Options.ToolSearch): for a catalogue too big to hand every
// agent on every turn, tools/list answers a small fixed set, the
// search_tools tool, and the agent finds the tools it needs by searching.
// A found tool is called by its name as any other: a tool the caller may
// see is callable whether or not it was listed.
//
// search_tools is served by the MCP front end itself, not by a plugin: a
// search is not a tool call, so it does not pass the pipeline and is not
// audited (it shows a caller only the definitions tools/list would show
// it without search). Its hits are filtered by the same visible set as
// tools/list: a hidden tool is never returned, whatever the query.

// SearchToolName is the name of the search tool.
const SearchToolName = "search_tools"

// Bounds of a search's limit argument.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
)

// searchArgs are search_tools' arguments.
type searchArgs struct {
	Query  string `json:"query"`
	Server string `json:"server,omitempty"`
	Limit  *int   `json:"limit,omitempty"`
}

// searchResult is search_tools' answer.
type searchResult struct {
	Tools []*toolDef `json:"tools"`
}

// searchTool describes search_tools to clients.
func searchTool() *mcp.Tool {
	f := false
	return &mcp.Tool{
		Name: SearchToolName,
		Description: "Search the tools you may call, by what they do. Answers the best-matching tools' full " +
			"definitions (name, description, inputSchema, server), best first; call a tool found by its name " +
			"as any listed tool. Search again with other words when none fits.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","description":"words describing the tool wanted: an action, an object, a parameter or a name"},`+
			`"server":{"type":"string","description":"only tools of this server (the plugin that serves them, as each hit's server says)"},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"most tools to answer; default %d"}},`+
			`"required":["query"],"additionalProperties":false}`, maxSearchLimit, defaultSearchLimit)),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true},
		Meta:        mcp.Meta{"plugkit/owner": "host"},
	}
}

// searching reports whether search_tools is served.
func (s *Server) searching() bool { return s.opts.ToolSearch }

// reindex builds the search index of the tools now served and replaces the
// previous one. It runs in the follow loop, after a change of the tool set.
func (s *Server) reindex() {
	tools := make([]pipeline.ToolInfo, 0, len(s.listed))
	for _, t := range s.listed {
		tools = append(tools, t)
	}
	x, err := buildSearchIndex(tools)
	if err != nil {
		// The previous index stays: searches find what it had.
		s.log.Error("tool search index not rebuilt", "error", err)
		return
	}
	old := s.index.Swap(x)
	if err := old.close(); err != nil {
		s.log.Warn("closing the previous tool search index", "error", err)
	}
}

// closeIndex closes the search index at shutdown.
func (s *Server) closeIndex() {
	if err := s.index.Swap(nil).close(); err != nil {
		s.log.Warn("closing the tool search index", "error", err)
	}
}

// visibleCount is how many served tools set shows.
func (x *searchIndex) visibleCount(set *pipeline.VisibleSet) (shown int) {
	for name := range x.tools {
		if set.Has(name) {
			shown++
		}
	}
	return shown
}

// searchList makes a tools/list page of a principal who sees set: when
// more than ToolSearchOver served tools are visible, search_tools alone
// on the first page and nothing on any later one; otherwise the page,
// with search_tools first on the first page.
func (s *Server) searchList(page *mcp.ListToolsResult, cursor string, set *pipeline.VisibleSet) {
	x := s.index.Load()
	if x != nil {
		if x.visibleCount(set) > s.opts.ToolSearchOver {
			page.NextCursor = ""
			page.Tools = nil
			if cursor == "" {
				page.Tools = []*mcp.Tool{s.searchDef}
			}
			return
		}
	}
	// The SDK's own entry of search_tools is on whichever page it falls
	// (and shown when a plugin registered the name too): it goes first,
	// once.
	page.Tools = slices.DeleteFunc(page.Tools, func(t *mcp.Tool) bool { return t.Name == SearchToolName })
	if cursor == "" {
		page.Tools = append([]*mcp.Tool{s.searchDef}, page.Tools...)
	}
}

// searchTools serves a call of search_tools.
func (s *Server) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := parseSearchArgs(req.Params.Arguments)
	if err != nil {
		return toolError(err.Error()), nil
	}
	set := s.visibleTo(ctx, s.principalOfExtra(req.Extra))
	var hits []hit
	for range 2 {
		x := s.index.Load()
		if x == nil {
			return toolError("search_tools: the tool search index is not ready; try again"), nil
		}
		hits, _, err = x.search(ctx, args.Query, args.Server, *args.Limit, set)
		if !errors.Is(err, errIndexClosed) {
			break // else the tool set changed under the search: once more on the new index
		}
	}
	if err != nil {
		s.log.Error("tool search failed", "error", err)
		return toolError("search_tools: the search failed: " + err.Error()), nil
	}
	out := searchResult{Tools: make([]*toolDef, 0, len(hits))}
	for _, h := range hits {
		out.Tools = append(out.Tools, h.def)
	}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("search_tools: encode the result: %w", err)
	}
	s.log.Debug("tools searched", "found", len(out.Tools))
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: json.RawMessage(text),
	}, nil
}

// parseSearchArgs checks search_tools' arguments, saying which one is wrong
// and why.
func parseSearchArgs(raw json.RawMessage) (searchArgs, error) {
	var a searchArgs
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return a, fmt.Errorf("search_tools: arguments: %v (the arguments are query, a string; server, a string; limit, an integer)", err)
		}
	}
	if strings.TrimSpace(a.Query) == "" {
		return a, errors.New(`search_tools: "query" is required: words describing the tool wanted`)
	}
	if a.Limit == nil {
		n := defaultSearchLimit
		a.Limit = &n
	} else if *a.Limit < 1 || *a.Limit > maxSearchLimit {
		return a, fmt.Errorf(`search_tools: "limit" %d is out of range: from 1 to %d`, *a.Limit, maxSearchLimit)
	}
	return a, nil
}

// toolError is a tool result that reports a mistake to the model.
func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
