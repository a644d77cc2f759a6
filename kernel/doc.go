// Package kernel holds the host's plugin kernel: scopes and their states,
// effects with undo, services with inject gating, events and extension points.
//
// A plugin's life, as the kernel drives it:
//
//  1. Load records the plugin as PENDING.
//  2. When every service it injects is provided, it moves to LOADING and its
//     Apply function runs with a fresh Scope.
//  3. Everything it registers through the Scope is an Effect: a registration
//     paired with its undo. Apply returning nil makes it ACTIVE; an error or a
//     panic undoes what it had registered and leaves it FAILED.
//  4. Unload (or its process dying) moves it to UNLOADING, undoes its effects
//     newest first and leaves it DISPOSED. Plugins that injected a service it
//     provided are undone back to PENDING and load again when a provider
//     returns: they are rebuilt, never patched.
//  5. Reload runs Apply again in a staged scope while the active one serves:
//     its registrations stay invisible until one step of the points swaps
//     them for the old scope's, then the old scope's remaining effects are
//     undone. A failed Apply leaves the old version serving.
//
// The kernel knows nothing of tools or of the wire: the pipeline package
// builds the tools service on top of points, and remote plugins are scopes
// whose effects happen to be proxies.
package kernel
