// Command host runs a plugkit deployment and talks to a running one.
//
//	host run      [-c config.hcl]   start the deployment in the foreground
//	host validate [-c config.hcl]   check the file and every plugin, start nothing
//	host mcp      [-c config.hcl]   serve the deployment to an MCP client over stdio
//	host status | tools | call TOOL [JSON] | reload [PLUGIN] | stop | lock
package main

import (
	"os"

	"github.com/plugkit-go/plugkit/confine"
)

func main() {
	// `host sandbox-exec`, hidden: the launcher of a sandboxed plugin.
	confine.RunIfLauncher()
	ctx, stop := signalContext(os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
