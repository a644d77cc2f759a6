// Package deployment reads the deployment file: one HCL file that declares
// the host's settings and one block per plugin. Its reference, every block
// and attribute with its default, is the guide docs/deployment-file.md (the
// sandbox block's is docs/sandboxing.md); the schema is the structs in
// schema.go, and a test fails when the guide misses one of their names.
//
// Reading it takes two steps, and both gather every problem before returning
// (they never stop at the first), each as an hcl.Diagnostic with the file,
// line and column:
//
//  1. Parse reads the file alone: syntax, names, types, durations, duplicate
//     plugins, host settings, and each plugin's binary (it exists, it is
//     executable, it matches its pinned sha256) and tools lists.
//  2. Check asks each plugin for its declaration (the caller starts the binary
//     and asks it) and adds what needs it: the config body against the
//     plugin's config JSON Schema, every injected service has a provider, no
//     dependency cycle; then it puts the plugins in start order.
//
// Nothing should be started while either step reports an error. Format prints
// the diagnostics one line each. CheckSandboxes holds each sandbox block up
// to what this machine's kernel can enforce.
package deployment
