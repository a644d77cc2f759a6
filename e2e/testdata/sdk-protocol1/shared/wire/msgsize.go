package wire

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// DefaultMaxMessageBytes is the largest gRPC message either side accepts when
// the deployment does not configure one: well above gRPC's 4 MiB receive
// default, which a search result or a file read easily exceeds.
const DefaultMaxMessageBytes = 64 << 20

// EnvMaxMessageBytes is the environment variable through which the host tells
// a plugin process the configured maximum. It has to be an environment
// variable: the plugin builds its gRPC server before the host can say anything
// over gRPC.
const EnvMaxMessageBytes = "PLUGKIT_MAX_MESSAGE_BYTES"

// MaxMessageEnv returns the "KEY=value" entry a host appends to a plugin
// command's environment.
func MaxMessageEnv(maxBytes int) string {
	return EnvMaxMessageBytes + "=" + strconv.Itoa(maxBytes)
}

// MaxMessageBytesFromEnv reads EnvMaxMessageBytes, or returns
// DefaultMaxMessageBytes when it is unset or empty.
func MaxMessageBytesFromEnv() (int, error) {
	v := os.Getenv(EnvMaxMessageBytes)
	if v == "" {
		return DefaultMaxMessageBytes, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a number of bytes", EnvMaxMessageBytes, v)
	}
	if err := ValidateMaxMessageBytes(n); err != nil {
		return 0, fmt.Errorf("%s: %w", EnvMaxMessageBytes, err)
	}
	return n, nil
}

// ValidateMaxMessageBytes reports whether n can be used as a gRPC limit.
func ValidateMaxMessageBytes(n int) error {
	if n <= 0 || n > math.MaxInt32 {
		return fmt.Errorf("max message size %d is outside 1..%d bytes", n, math.MaxInt32)
	}
	return nil
}

// ServerOptions raise a gRPC server's receive and send limits to maxBytes.
func ServerOptions(maxBytes int) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxBytes),
		grpc.MaxSendMsgSize(maxBytes),
	}
}

// DialOptions set a client connection's receive and send limits to maxBytes.
func DialOptions(maxBytes int) []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(maxBytes),
		grpc.MaxCallSendMsgSize(maxBytes),
	)}
}

// NewGRPCServer returns a server factory in the shape go-plugin wants
// (ServeConfig.GRPCServer, GRPCBroker.AcceptAndServe): it keeps the options
// go-plugin passes (TLS) and adds the size limits and any extra options.
func NewGRPCServer(maxBytes int, extra ...grpc.ServerOption) func([]grpc.ServerOption) *grpc.Server {
	return func(opts []grpc.ServerOption) *grpc.Server {
		all := make([]grpc.ServerOption, 0, len(opts)+2+len(extra))
		all = append(all, opts...)
		all = append(all, ServerOptions(maxBytes)...)
		all = append(all, extra...)
		return grpc.NewServer(all...)
	}
}

// TooLargeError says that a message would exceed the size limit. Both sides
// check before sending, so the other side gets this clear message instead of
// gRPC's transport error.
type TooLargeError struct {
	// What was too large, e.g. `result of tool "read"`.
	What string
	// Size of the encoded message in bytes.
	Size int
	// The configured maximum.
	Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the %d-byte message limit", e.What, e.Size, e.Max)
}

// CheckSize returns a *TooLargeError when m encodes to more than maxBytes.
func CheckSize(what string, m proto.Message, maxBytes int) error {
	if n := proto.Size(m); n > maxBytes {
		return &TooLargeError{What: what, Size: n, Max: maxBytes}
	}
	return nil
}

// CallFrameOverhead is the room a frame of the call stream (pb.CallFrame)
// needs around the request or response it carries: a request or response
// larger than the message limit less this does not go on the stream.
const CallFrameOverhead = 1 << 10
