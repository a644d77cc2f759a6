package mcpserver

// MCPTool is mcpTool, for the benchmark's baseline: the SDK's own list of
// the tools this server would list.
var MCPTool = mcpTool

// FlushEachEvent turns off sending a call's answer with the end of its
// stream (endflush.go), for the benchmark's baseline; set it before the
// server serves.
func FlushEachEvent(on bool) { flushEachEvent = on }
