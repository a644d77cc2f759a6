// Package sdktest tests a plugin written with package sdk without a host:
// Start serves the plugin in the test's process over real gRPC (an
// in-memory bufconn connection, the messages and the code paths of a
// plugin process) against a fake host whose behaviour the test sets in
// function fields (Host), applies it with a configuration, and returns a
// Plugin whose methods call its tools, stage-1 listeners, guards, stage-3
// and stage-4 listeners and observers in the order and with the rules the
// host's pipeline uses, and show what it registered. Conformance runs the
// protocol cases that apply to any one plugin.
package sdktest
