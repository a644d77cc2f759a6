// Package mcpserver serves a host's tools to agents over the Model Context
// Protocol: over stdio for clients that launch their tool servers (`host
// mcp`), and over streamable HTTP on a loopback address while `host run`
// runs (the deployment's `host { mcp = "127.0.0.1:8765" }`, path /mcp).
//
//   - tools/list is the live registry: each tool's name, description, its
//     parameters as inputSchema and its hints as annotations (readOnlyHint,
//     destructiveHint, idempotentHint); _meta["plugkit/owner"] names the
//     plugin. When plugins come, go, reload or crash, every connected client
//     is sent notifications/tools/list_changed.
//   - tools/call runs the call through the whole pipeline with the MCP
//     session as the caller (mcp#N). A result that is not ok is a tool result
//     with isError set whose text is "CODE: message (decided by X)", never a
//     protocol error; _meta carries plugkit/id, plugkit/code and
//     plugkit/decided_by. Cancelling the request cancels the call (ABORTED).
//     An ok value is served as text (and an object also as
//     structuredContent), except a value that is an MCP result's content
//     ({"content": [...], "structuredContent": ...}, what the mcp bridge
//     plugin returns), which is served as that result.
//   - When a policy asks, the question goes to the client's user as a form
//     elicitation with one boolean, "approve": accept with approve = true
//     approves, anything else refuses. A client without elicitation gets
//     DENIED with a reason saying an approval was needed; an unanswered
//     question is DENIED after the deployment's approval timeout.
//
// The question reaches the client one of two ways, chosen per session the
// way the SDK chooses: a session that negotiated a protocol before
// 2026-07-28 is sent an elicitation/create request while the call waits; a
// newer one gets an input-required result (SEP-2322) whose requestState
// names the waiting call, and its retry carries the answer.
//
// Over streamable HTTP a 2026-07-28 client is served without a session
// (stateless.go): each request is on its own, and so is each its own
// caller. Its question's requestState is sealed (sealed.go) over who the
// call is for, the request and an expiry, with a key replicas may share
// (UseStateKeys); the call that asked ends ABORTED, and the retry, on any
// replica holding the key, runs the call again with the answer given to
// the same question. A call waiting for an approval route's approvers does
// not hold such a request: it waits apart from it, and the client's
// retries pick it up (routedwait.go).
//
// Over streamable HTTP the server keeps at most Options.MaxSessions sessions
// (the deployment's mcp_max_sessions): one more closes the session idle
// longest, and is refused with 503 when every session is busy. A session
// with no request for Options.SessionIdle (mcp_idle_timeout) ends. The HTTP
// server caps its connections and bounds each request's time and size
// (internal/httplimit).
//
// With Options.ToolSearch (the deployment's mcp_tool_search) the server
// serves search_tools itself (toolsearch.go): a BM25 search, over an
// in-memory bleve index of the served tools (searchindex.go), filtered by
// the caller's visible set; a caller who sees more than
// Options.ToolSearchOver tools is listed search_tools alone.
//
// A Server is used in three steps:
//
//  1. New follows the host's registry and serves nothing yet.
//  2. Run serves one session over a transport (stdio); Serve serves
//     streamable HTTP on a listener. Both may run at once.
//  3. Shutdown ends every call in flight (ABORTED), every session and the
//     HTTP server, and stops following the registry.
package mcpserver
