package mcpserver

import (
	"context"
	"io"
	"net/http"
)

// ServeStdioSDK is ServeStdio with every message served by the SDK (no
// hot path), the baseline of the hot path's differential tests.
func (s *Server) ServeStdioSDK(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.serveStdio(ctx, r, w, false)
}

// MCPTool is mcpTool, for the benchmark's baseline: the SDK's own list of
// the tools this server would list.
var MCPTool = mcpTool

// FlushEachEvent turns off sending a call's answer with the end of its
// stream (endflush.go), for the benchmark's baseline; set it before the
// server serves.
func FlushEachEvent(on bool) { flushEachEvent = on }

// HotCalls is how many tools/call requests the stdio hot path served.
func (s *Server) HotCalls() int64 { return s.hotTaken.Load() }

// HandlerSDK is Handler with every request served by the SDK (no HTTP hot
// path), the baseline of its differential test and benchmark.
func (s *Server) HandlerSDK() http.Handler { return s.handler(false) }
