// Package pb is the Go code protoc generates from proto/plugkit.proto: the
// messages and the gRPC services of the plugin protocol (gen.sh makes it
// again; it is committed, so a build needs Go alone). Code on either side
// of the boundary reads and writes these messages through package wire,
// which converts them to and from the Go values both sides share.
package pb
