// Command mcp is a plugkit plugin that bridges one existing MCP server,
// started as a command (stdio) or reached at a URL (streamable HTTP), into
// the host's pipeline: each of the server's tools becomes a pipeline tool of
// this plugin, so every call to it passes the five stages, the guards, the
// approvals and the audit like any other tool. It uses the Go MCP SDK's
// client for both transports.
//
// What a server tool becomes: its name (with the optional prefix and an
// underscore), its description (else its title), its inputSchema as the
// parameters stage 0 checks, and its annotations as hints with MCP's
// defaults (readOnlyHint false, destructiveHint true unless read-only,
// idempotentHint false): a tool without annotations counts as destructive.
// A call's arguments go to tools/call; isError becomes TOOL_ERROR with the
// server's text; any other result is the value {"content": [...],
// "structuredContent": ...} (see result). Cancelling the call sends MCP's
// notifications/cancelled; the block's timeout is each tool's declared
// timeout. notifications/tools/list_changed re-lists and registers, disposes
// or replaces what changed.
//
// A stdio server gets only the environment the block declares plus PATH and
// HOME, runs in the deployment file's folder, and has its stderr relayed to
// the host's log under this plugin's name. It runs in a process group of
// its own under a small launcher (this binary again), so it dies with the
// plugin even when the plugin or the host is SIGKILLed (see package launcher).
//
// When the server exits or its endpoint goes away, new calls fail at once
// with TOOL_ERROR naming the cause, calls in flight fail the same way, and
// the plugin exits: the host's supervision restarts it under the block's
// restart policy (backoff, crash budget, FAILED after a crash loop), which
// starts the server again. The bridge does not restart servers itself.
//
// Example deployment block:
//
//	plugin "fs" {
//	  path = "bin/plugins/mcp"
//	  config {
//	    command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "sandbox"] # or: url = "https://…/mcp"
//	    env     = { LOG_LEVEL = "warn" }  # command only: the server's whole environment, plus PATH and HOME
//	    prefix  = "fs"                    # optional: tools registered as fs_read_text_file, …
//	    timeout = "30s"                   # optional: each tool's declared timeout
//	    tools {                           # optional: globs over the server's own tool names
//	      enabled  = ["read_*", "list_*"]
//	      disabled = ["read_media_file"]
//	    }
//	    # url only: headers { Authorization = "Bearer …" }, or an auth block
//	    # whose token the host obtains per call (docs/token-exchange.md):
//	    # auth { token_exchange { token_url = "…", audience = "…", client_id = "…", client_secret = "…" } }
//	  }
//	}
package main

import (
	"github.com/plugkit-go/plugkit/plugins/mcp/launcher"
	// This binary is also its servers' launcher: early serves it before
	// the packages only the bridge needs initialize.
	_ "github.com/plugkit-go/plugkit/plugins/mcp/launcher/early"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

func main() {
	// The launcher, served already by early; said again here, where a
	// reader looks.
	launcher.RunIfLauncher()
	sdk.Serve(newPlugin())
}
