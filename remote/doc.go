// Package remote runs plugins as separate processes with HashiCorp
// go-plugin (gRPC only) and plugs them into the kernel and the pipeline.
//
// A remote plugin's life:
//
//  1. Manager.Load starts its binary (AutoMTLS, an optional pinned
//     checksum, a private socket folder, an empty environment, two call
//     lanes: socket pairs it inherits, lanes.go) and asks it what it needs
//     (Describe). A plugin with a Sandbox is started through
//     the launcher (package sandbox: Options.Launcher, by default the
//     running executable), which confines it before it execs the binary.
//  2. The kernel loads it like any plugin. Its apply step makes the process
//     an effect of the scope, serves the plugin its Host service on a
//     socket of its own (a go-plugin broker id, no multiplexing: the
//     plugin speaks plain gRPC), and runs the plugin's own apply step.
//  3. Each registration the process makes is recorded in its scope as a
//     proxy: a pipeline function that makes one call (two for a wrapper)
//     and turns every failure into the error the pipeline maps fail-closed.
//     A call is a frame on the plugin's call lane when the plugin serves
//     it, else on its gRPC call stream, else an RPC (calls.go); the
//     plugin's calls back come on its callback lane or as RPCs.
//  4. When the process exits for any reason the scope ends and its effects
//     are undone; calls in flight fail at once. A crash restarts it under its
//     restart policy; meanwhile a critical plugin holds every call DENIED,
//     and calls to its tools fail at once saying it is restarting.
//  5. Manager.Reload and Replace start a new process and apply it in a
//     staged scope while the old one serves (kernel.Reload), then stop the
//     old one once no call can still reach it (pipeline.Tools.Quiesce).
//
// A critical plugin's result listeners are durable (durable.go): results
// wait in the host until a process acknowledges them, across crashes. A
// call in one of its pre-execute filters when its process dies is asked
// again alone in the next one (solo.go); arguments that crash it alone are
// denied and neither exit is counted toward the restart budget.
//
// Where a call into a plugin spends its time, measured on both sides of the
// boundary, and how to measure it again: docs/remote-call-profile.md.
package remote
