// Package pipeline is the host's `tools` service: the tool registry and the
// five-stage pipeline every call passes through.
//
// A call to Tools.Execute runs, in order:
//
//  0. lookup and argument check against the tool's JSON Schema
//  1. tools/pre-execute  (waterfall, default Allow): Allow, Deny or Ask
//  2. guards             (monotonic): a reason denies, nothing passes
//  3. tools/execute      (waterfall around the tool's body)
//  4. tools/post-execute (waterfall, default Accept): Accept, AcceptReplacing or Block
//  5. tools/result       (emit, observe only)
//
// In every waterfall the first registered listener is the outermost. Execute
// never fails: every failure, including a listener's error or panic, comes
// back as a Result with one of the seven codes, and a failing listener of
// stages 1, 2 or 4 fails closed. Listeners see a frozen Execution whose
// arguments are canonical JSON no stage can change.
//
// Plugins reach the service through the kernel: a plugin that injects
// "tools" gets a *Registrar bound to its scope, so each registration is an
// effect of that plugin and disappears with it. The registry, guards,
// approvers and stage listeners are held in kernel points; each change
// recompiles an immutable snapshot that calls in flight keep using.
package pipeline
