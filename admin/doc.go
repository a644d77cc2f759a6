// Package admin is the host's admin API: JSON over HTTP on an owner-only
// Unix socket, served while `host run` runs and used by the other `host`
// commands.
//
//	GET  /v1/status          every plugin: state, pid, uptime, restarts, tools, last error
//	GET  /v1/tools           every tool: name, owner, hints, parameters
//	                         (?as=KIND:ID&attribute=k:v: those shown to that principal)
//	POST /v1/call            one call through the pipeline (a stream, see below)
//	POST /v1/explain         what a call would do, stages 0-2 as a dry run ({"tool", "arguments", "as"}); nothing executes
//	POST /v1/answer          the answer to a question asked during a call
//	POST /v1/reload          restart one plugin ({"plugin": name}) or reload the file ({})
//	POST /v1/stop            stop the host
//	POST /v1/tokens          the user_consent tokens kept ({"principal", "plugin"}, either may be ""), never a token
//	POST /v1/tokens/revoke   drop a principal's user_consent tokens ({"principal", "plugin"})
//	GET  /v1/approvals       the requests of approval routes, pending first
//	GET  /v1/approvals/{id}  one request: tool, arguments, caller, route, decisions
//	POST /v1/approvals/{id}/approve  approve as the socket's peer ({"reason", "args_sha256"})
//	POST /v1/approvals/{id}/deny     deny as the socket's peer ({"reason"})
//
// A call's response is newline-delimited JSON: zero or more
// {"question": {...}} events, when an approver asks and the client said it
// can answer, a {"waiting": {...}} event when the call waits for the
// approvers of a route, zero or more {"elicitation": {"id", "tool",
// "params"}} events when a plugin serving an interactive call asks its user
// something (a bridged server's elicitation/create; a call that is not
// interactive has it declined), then one {"result": {...}}. The client
// answers a question with POST /v1/answer {"id", "key", "approved"}, an
// elicitation with {"id", "key", "elicited": ElicitResult}, while the call
// waits.
//
// Who may talk to whom: Listen refuses a socket folder that another user
// owns or that its group or others can write to (they could put their own
// socket in its place) and records the host's pid beside the socket
// (PidFile). The server refuses a connection from a plugin of any host, or
// from anything a plugin started (package lineage), before reading
// anything from it. The Client refuses a socket served by a process of
// another user (SO_PEERCRED, PeerError), by a plugin, or by any process but
// the one whose pid the host recorded (ImpostorError), before sending
// anything.
//
// Limits (internal/httplimit): a capped number of connections, a request's
// headers and body each within their time, a body at most the deployment's
// max_message_bytes (larger is 413 with an error naming the limit).
package admin
