//go:build unix

package wire

import (
	"context"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// BenchmarkLaneCall is one Guard call through a FrameClient and a
// FrameServer on a lane, both in this process; BenchmarkSocketPairPingPong
// is the floor under it, a bare 64-byte round trip on a socket pair. Their
// difference is what the frames, protobuf and goroutine hand-offs cost.
func BenchmarkLaneCall(b *testing.B) {
	c, _ := lanePeers(b, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		return HandleFrame(ctx, f, "plugkit.v1.Plugin", func(context.Context, *pb.GuardRequest) (*pb.GuardResponse, error) {
			return &pb.GuardResponse{}, nil
		}, nil)
	}, never)
	ctx := context.Background()
	req := &pb.GuardRequest{HandlerId: "h1", Execution: &pb.Execution{Id: "0123abcd-1", Name: "add", ArgumentsJson: []byte(`{"a":2,"b":3}`)}}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Invoke(ctx, "Guard", req, &pb.GuardResponse{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSocketPairPingPong(b *testing.B) {
	host, peer := lanePair(b)
	defer host.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(peer, buf); err != nil {
				peer.Close()
				return
			}
			if _, err := peer.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64)
	for b.Loop() {
		if _, err := host.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(host, buf); err != nil {
			b.Fatal(err)
		}
	}
	host.Close()
	<-done
}
