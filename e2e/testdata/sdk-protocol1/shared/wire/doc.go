// Package wire is the Go side of the plugkit wire contract, shared by the host
// and by every plugin binary (through package sdk).
//
// It holds, each in its own file:
//   - the go-plugin handshake and the plugin-map name (handshake.go);
//   - the go-plugin GRPCPlugin glue: the plugin side registers its Plugin
//     service, the host side gets a typed PluginClient (grpcplugin.go);
//   - the plain Go values that cross the wire (types.go) and the one place
//     that converts them to and from the generated messages (convert.go);
//   - the gRPC message-size options, raised on both sides above gRPC's 4 MiB
//     default to one configured maximum (msgsize.go).
//
// The generated messages and services live in package pb; the protocol is
// described for other languages in shared/README.md.
//
// wire imports neither the host's kernel nor its pipeline: it is built into
// every plugin binary.
package wire
