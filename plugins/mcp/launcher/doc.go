// Package launcher is the process a bridged stdio server runs under: the
// bridge runs its own binary again as the launcher (os.Args[1] == Arg),
// and the launcher runs the server. It is a package of its own, needing
// only the standard library, so that package early can serve it while the
// binary initializes, before most packages only the bridge needs (the
// MCP SDK, gRPC, JSON Schema, the bridge's own regexps) run their
// initialisation and allocate: the launcher only waits and signals, and
// it lives as long as the server.
package launcher
