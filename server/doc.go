// Package server runs a deployment: the host (kernel, pipeline, plugins,
// built by package host) and every listener the deployment names — the
// admin socket, MCP over streamable HTTP, metrics and health, the consent
// callback, the web console — started in an order that refuses a second
// host before anything starts, and stopped in the reverse order after a
// drain. It is the one place the running parts are assembled.
//
// The host CLI (cmd/host) loads and checks the deployment file, then calls
// Run for `host run` and ServeStdio for `host mcp`; a program embedding
// plugkit does the same:
//
//	d, diags := host.Load(ctx, "config.hcl", log)
//	if diags.HasErrors() { ... }
//	err := server.Run(ctx, d, server.Options{Version: host.Version, Logger: log})
package server
