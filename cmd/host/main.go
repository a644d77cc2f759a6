// Command host runs a plugkit deployment and talks to a running one.
//
//	host run      [-c config.hcl]   start the deployment in the foreground
//	host validate [-c config.hcl]   check the file and every plugin, start nothing
//	host mcp      [-c config.hcl]   serve the deployment to an MCP client over stdio
//	host status | tools | call TOOL [JSON] | reload [PLUGIN] | stop | lock
package main

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/plugkit-go/plugkit/sandbox"
	// The host binary is the launcher of its sandboxed plugins: early
	// serves the launcher before the packages only the host needs
	// initialize.
	_ "github.com/plugkit-go/plugkit/sandbox/early"
)

// quietRedis drops go-redis's own log lines (a failed dial, for one): the
// host reports a store's errors itself, once per call (the call's denial,
// metrics). go-redis has one logger per process, so main sets it.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func main() {
	// `host sandbox-exec`, hidden: the launcher of a sandboxed plugin
	// (served already by early; said again here, where a reader looks).
	sandbox.RunIfLauncher()
	redis.SetLogger(quietRedis{})
	ctx, stop := signalContext(os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
