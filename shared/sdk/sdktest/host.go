package sdktest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// Host is the fake host a plugin under test calls back. Every field is
// optional: a nil field has the default its comment gives. Set a field to
// make the host refuse a registration, answer a service call or a tool
// call the plugin makes, and so on.
type Host struct {
	// Register answers a registration (kind is the RPC's name:
	// "RegisterTool", "AddGuard", "Listen", "SetApprover", "Provide",
	// "Contribute") with its registration id. Nil: every registration is
	// accepted. Either way Plugin.Registrations lists the accepted ones.
	Register func(kind string, req proto.Message) (id string, err error)
	// Dispose answers Dispose. Nil: an id the host gave is disposed, an
	// unknown id is NOT_FOUND.
	Dispose func(id string) error
	// CallService answers the plugin's calls of the services it injects.
	// Nil: UNIMPLEMENTED.
	CallService func(ctx context.Context, req *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error)
	// ExecuteTool answers the plugin's calls of tools through the
	// pipeline. Nil: UNIMPLEMENTED.
	ExecuteTool func(ctx context.Context, req *pb.HostExecuteToolRequest) (*pb.HostExecuteToolResponse, error)
	// ReportProblem receives the plugin's reports. Nil: recorded only
	// (Plugin.Problems).
	ReportProblem func(req *pb.ReportProblemRequest) error
}

// Registration is one registration the fake host accepted.
type Registration struct {
	// Kind is the RPC's name, "RegisterTool", "Listen", ...
	Kind string
	// ID is the registration id the host gave.
	ID string
	// Request is the registration request, a *pb.RegisterToolRequest,
	// *pb.ListenRequest, ... (for RegisterTools, one RegisterToolRequest
	// each).
	Request proto.Message
}

// handlerID returns the handler id of a registration ("" for Provide by
// service name and Contribute).
func (r Registration) handlerID() string {
	if m, ok := r.Request.(interface{ GetHandlerId() string }); ok {
		return m.GetHandlerId()
	}
	return ""
}

// hostServer serves Host's fields over the Host service and records what
// the plugin registered, in order.
type hostServer struct {
	pb.UnimplementedHostServer
	h     *Host
	chain *chains

	mu       sync.Mutex
	n        int
	regs     []Registration
	problems []*pb.ReportProblemRequest
}

func (s *hostServer) register(kind string, req proto.Message) (string, error) {
	var id string
	if s.h.Register != nil {
		var err error
		if id, err = s.h.Register(kind, req); err != nil {
			return "", err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if id == "" {
		id = fmt.Sprintf("reg-%d", s.n)
	}
	s.regs = append(s.regs, Registration{Kind: kind, ID: id, Request: req})
	return id, nil
}

func (s *hostServer) registrations() []Registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.regs)
}

func (s *hostServer) RegisterTool(_ context.Context, r *pb.RegisterToolRequest) (*pb.RegisterToolResponse, error) {
	id, err := s.register("RegisterTool", r)
	return &pb.RegisterToolResponse{RegistrationId: id}, err
}

func (s *hostServer) RegisterTools(ctx context.Context, r *pb.RegisterToolsRequest) (*pb.RegisterToolsResponse, error) {
	for _, id := range r.GetDisposeRegistrationIds() {
		if _, err := s.Dispose(ctx, &pb.DisposeRequest{RegistrationId: id}); err != nil {
			return nil, err
		}
	}
	resp := &pb.RegisterToolsResponse{}
	for _, t := range r.GetTools() {
		id, err := s.register("RegisterTool", t)
		res := &pb.RegisterToolsResult{RegistrationId: id}
		if err != nil {
			res = &pb.RegisterToolsResult{Error: err.Error()}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func (s *hostServer) AddGuard(_ context.Context, r *pb.AddGuardRequest) (*pb.AddGuardResponse, error) {
	id, err := s.register("AddGuard", r)
	return &pb.AddGuardResponse{RegistrationId: id}, err
}

func (s *hostServer) Listen(_ context.Context, r *pb.ListenRequest) (*pb.ListenResponse, error) {
	id, err := s.register("Listen", r)
	return &pb.ListenResponse{RegistrationId: id}, err
}

func (s *hostServer) SetApprover(_ context.Context, r *pb.SetApproverRequest) (*pb.SetApproverResponse, error) {
	id, err := s.register("SetApprover", r)
	return &pb.SetApproverResponse{RegistrationId: id}, err
}

func (s *hostServer) Provide(_ context.Context, r *pb.ProvideRequest) (*pb.ProvideResponse, error) {
	id, err := s.register("Provide", r)
	return &pb.ProvideResponse{RegistrationId: id}, err
}

func (s *hostServer) Contribute(_ context.Context, r *pb.ContributeRequest) (*pb.ContributeResponse, error) {
	id, err := s.register("Contribute", r)
	return &pb.ContributeResponse{RegistrationId: id}, err
}

func (s *hostServer) Dispose(_ context.Context, r *pb.DisposeRequest) (*pb.DisposeResponse, error) {
	id := r.GetRegistrationId()
	if s.h.Dispose != nil {
		if err := s.h.Dispose(id); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.regs, func(g Registration) bool { return g.ID == id })
	if i < 0 {
		if s.h.Dispose != nil {
			return &pb.DisposeResponse{}, nil
		}
		return nil, status.Errorf(codes.NotFound, "fake host: no registration %q", id)
	}
	s.regs = slices.Delete(s.regs, i, i+1)
	return &pb.DisposeResponse{}, nil
}

// forget drops every registration, as the host does when it undoes a
// plugin's scope before applying it again.
func (s *hostServer) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regs = nil
}

func (s *hostServer) Next(ctx context.Context, r *pb.NextRequest) (*pb.NextResponse, error) {
	return s.chain.next(ctx, r.GetCallToken())
}

func (s *hostServer) CallService(ctx context.Context, r *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error) {
	if s.h.CallService == nil {
		return nil, status.Error(codes.Unimplemented, "fake host: CallService not set")
	}
	return s.h.CallService(ctx, r)
}

func (s *hostServer) ExecuteTool(ctx context.Context, r *pb.HostExecuteToolRequest) (*pb.HostExecuteToolResponse, error) {
	if s.h.ExecuteTool == nil {
		return nil, status.Error(codes.Unimplemented, "fake host: ExecuteTool not set")
	}
	return s.h.ExecuteTool(ctx, r)
}

func (s *hostServer) ReportProblem(_ context.Context, r *pb.ReportProblemRequest) (*pb.ReportProblemResponse, error) {
	s.mu.Lock()
	s.problems = append(s.problems, r)
	s.mu.Unlock()
	if s.h.ReportProblem != nil {
		if err := s.h.ReportProblem(r); err != nil {
			return nil, err
		}
	}
	return &pb.ReportProblemResponse{}, nil
}
