package remote

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// TestExportSpansBounded: a plugin handing back span batches as fast as it
// can gets the burst through and RESOURCE_EXHAUSTED for the rest; the
// host's collector never sees the flood.
func TestExportSpansBounded(t *testing.T) {
	var exported atomic.Int64
	in := &instance{
		name: "P",
		log:  hclog.NewNullLogger(),
		telemetry: telemetry{
			spanBatches: rate.NewLimiter(spanBatchesPerSecond, 2*spanBatchesPerSecond),
			exportSpans: func(context.Context, string, []byte) error { exported.Add(1); return nil },
		},
	}
	h := newHostService(in, nil)
	refused := 0
	for range 1000 {
		_, err := h.ExportSpans(t.Context(), &pb.ExportSpansRequest{Otlp: []byte{1}})
		switch status.Code(err) {
		case codes.OK:
		case codes.ResourceExhausted:
			refused++
		default:
			t.Fatalf("ExportSpans: %v", err)
		}
	}
	// The loop takes far less than a second: the burst, and perhaps a few
	// refilled tokens, get through.
	if n := exported.Load(); n < 2*spanBatchesPerSecond || n > 2*spanBatchesPerSecond+spanBatchesPerSecond {
		t.Fatalf("%d batches exported, want about %d", n, 2*spanBatchesPerSecond)
	}
	if refused == 0 || in.spansDropped.Load() != int64(refused) {
		t.Fatalf("refused %d, counted %d", refused, in.spansDropped.Load())
	}
}
