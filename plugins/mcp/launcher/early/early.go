// Package early serves the MCP bridge's launcher (package launcher) while
// the bridge's binary initializes, before most of its packages do: a
// binary's packages are initialized in import-path order once their own
// imports are, and this one needs only package launcher, which needs only
// the standard library. A launcher so skips the initialisation of most
// packages only the bridge needs (the bridge's regexps, gRPC, the MCP
// SDK, JSON Schema): 0.36 MB allocated at init instead of 0.96 MB, which
// it would otherwise hold for as long as its server runs. What still runs
// first (protobuf's descriptor registry, 0.23 MB) sorts before os/exec and
// os/signal, which package launcher waits for. The same as sandbox/early
// does for the host.
//
// Only the bridge's main imports it, for that effect alone:
//
//	import _ "github.com/plugkit-go/plugkit/plugins/mcp/launcher/early"
package early

import "github.com/plugkit-go/plugkit/plugins/mcp/launcher"

func init() { launcher.RunIfLauncher() }
