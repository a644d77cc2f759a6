// Package host assembles a running deployment: the kernel, the tools
// pipeline, the built-in policies the deployment asks for, the host's own
// approver (which puts questions to the client that made the call) and the
// plugin processes, in start order. cmd/host and the front ends (the admin
// socket, MCP) drive it.
package host
