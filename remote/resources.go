package remote

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// updatesPerSecond bounds the resource updates one plugin process may
// report (a bridged server may send notifications/resources/updated as
// fast as it likes), with a burst of twice as many.
const updatesPerSecond = 50

// maxURIBytes bounds a reported URI.
const maxURIBytes = 8192

// ResourceUpdated hands a plugin's resource change, or the change of its
// list of resources (uri ""), to the host's front ends
// (Options.OnResourceUpdated), named for the plugin whatever it says.
func (h *hostService) ResourceUpdated(_ context.Context, req *pb.ResourceUpdatedRequest) (*pb.ResourceUpdatedResponse, error) {
	uri := req.GetUri()
	if req.GetListChanged() {
		if uri != "" {
			return nil, status.Error(codes.InvalidArgument, "resource updated: a list change names no URI")
		}
	} else if uri == "" || len(uri) > maxURIBytes {
		return nil, status.Errorf(codes.InvalidArgument, "resource updated: the URI is empty or over %d bytes", maxURIBytes)
	}
	if !h.inst.updates.Allow() {
		if h.inst.updatesDropped.Add(1) == 1 {
			h.inst.log.Warn("plugin reports resource updates faster than the host takes them; dropping the excess", "limit_per_second", updatesPerSecond)
		}
		return nil, status.Errorf(codes.ResourceExhausted, "resource updates over %d a second: update dropped", updatesPerSecond)
	}
	if h.inst.onUpdated != nil {
		h.inst.onUpdated(h.inst.name, uri)
	}
	return &pb.ResourceUpdatedResponse{}, nil
}
