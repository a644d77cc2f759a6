package mcpserver

// MCPTool is mcpTool, for the benchmark's baseline: the SDK's own list of
// the tools this server would list.
var MCPTool = mcpTool
