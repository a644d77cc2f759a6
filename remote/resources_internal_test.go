package remote

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// TestResourceUpdatedBounded: a plugin's resource updates reach the host
// named for the plugin, a bad URI is refused saying why, and a flood past
// the limiter's tokens is refused (RESOURCE_EXHAUSTED) without reaching
// the host.
func TestResourceUpdatedBounded(t *testing.T) {
	type update struct{ plugin, uri string }
	var got []update
	in := &instance{
		name: "P",
		log:  hclog.NewNullLogger(),
		telemetry: telemetry{
			// No refill: exactly the burst gets through, however fast.
			updates:   rate.NewLimiter(0, 3),
			onUpdated: func(plugin, uri string) { got = append(got, update{plugin, uri}) },
		},
	}
	h := newHostService(in, nil)
	for _, uri := range []string{"", strings.Repeat("x", maxURIBytes+1)} {
		if _, err := h.ResourceUpdated(t.Context(), &pb.ResourceUpdatedRequest{Uri: uri}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "URI") {
			t.Errorf("ResourceUpdated(%d bytes): %v, want InvalidArgument naming the URI", len(uri), err)
		}
	}
	refused := 0
	for range 10 {
		_, err := h.ResourceUpdated(t.Context(), &pb.ResourceUpdatedRequest{Uri: "x://a"})
		switch status.Code(err) {
		case codes.OK:
		case codes.ResourceExhausted:
			refused++
		default:
			t.Fatalf("ResourceUpdated: %v", err)
		}
	}
	if len(got) != 3 || got[0] != (update{"P", "x://a"}) || refused != 7 || in.updatesDropped.Load() != 7 {
		t.Fatalf("passed %v, refused %d (counted %d); want 3 passed for P, 7 refused", got, refused, in.updatesDropped.Load())
	}
}
