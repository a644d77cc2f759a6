package deployment

// toolSearch reads mcp_tool_search and its threshold, mcp_tool_search_over,
// which means nothing without it.
func (p *parser) toolSearch(hs *hostSyntax, h *Host) {
	if hs.MCPToolSearch != nil {
		h.MCPToolSearch = *hs.MCPToolSearch
	}
	h.MCPToolSearchOver = p.count(hs.Body, "mcp_tool_search_over", hs.MCPSearchOver, 0, 0)
	if hs.MCPSearchOver != nil && p.decoded(hs.Body, "mcp_tool_search_over") && !h.MCPToolSearch {
		p.errorf(valueRange(hs.Body, "mcp_tool_search_over", hs.DefRange), "mcp_tool_search_over without mcp_tool_search",
			"mcp_tool_search_over is the threshold of tool search, which is off: set mcp_tool_search = true, or remove mcp_tool_search_over.")
	}
}
