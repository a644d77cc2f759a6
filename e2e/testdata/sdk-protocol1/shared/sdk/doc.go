// Package sdk is what a plugkit plugin's main imports: one generic Serve that
// turns a Plugin definition into a plugin process the plugkit host can run.
//
// A plugin's life, as the host drives it:
//
//  1. The host starts the binary with go-plugin. Serve protects the
//     handshake line on stdout, arranges to exit when the host dies, and
//     serves the Plugin gRPC service with raised message limits.
//  2. The host calls Describe: name, version, the configuration's JSON Schema
//     (derived from the config struct C unless declared) and the services the
//     plugin injects.
//  3. The host calls Apply with the configuration as JSON and the broker id of
//     its callback service. Serve decodes the configuration strictly into C
//     (an unknown field is an error naming it), dials the host once, and runs
//     Plugin.Apply. Through *Context the plugin registers tools, guards,
//     listeners, an approver, services and contributions; each call is one
//     RPC to the host and returns a *Handle whose Dispose undoes it. Calls
//     made after Apply returned work the same way.
//  4. The host calls the registered handlers as tool calls flow through its
//     pipeline. Each handler runs under the context of the host's call: when
//     the host cancels or the deadline passes, that context is done. A panic
//     in a handler becomes a failure reply and the plugin keeps serving.
//  5. On a graceful unload the host closes the result stream after draining
//     it and calls Shutdown: calls in flight finish, Plugin.Stop runs, the
//     host connection closes, and the host ends the process. If the host dies
//     instead, the plugin exits by itself within a second.
//
// Handlers must be safe for concurrent use: the host calls them in parallel.
//
// # Traces
//
// When the host traces calls (a tracing block in its deployment file), a
// handler's context holds the span of the host's RPC, and the process's
// global OpenTelemetry provider records spans inside it: a handler makes
// spans of its own with the OpenTelemetry API,
//
//	ctx, span := otel.Tracer("myplugin").Start(ctx, "query the index")
//	defer span.End()
//
// and they join the call's trace. The SDK hands finished spans to the host,
// which sends them to its collector: the plugin needs no network and no
// exporter. Without tracing in the host the provider is OpenTelemetry's
// no-op one and such a span costs next to nothing.
package sdk
