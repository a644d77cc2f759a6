package sdk

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// fakeHost is the host's callback service as a struct of function fields:
// each test sets the behaviour it needs; unset fields use the recording
// defaults below.
type fakeHost struct {
	pb.UnimplementedHostServer

	// register answers every registration RPC (kind is the RPC name).
	register    func(kind string, req proto.Message) (string, error)
	dispose     func(id string) error
	next        func(ctx context.Context, req *pb.NextRequest) (*pb.NextResponse, error)
	callService func(ctx context.Context, req *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error)
	executeTool func(ctx context.Context, req *pb.HostExecuteToolRequest) (*pb.HostExecuteToolResponse, error)
}

func (h *fakeHost) RegisterTool(_ context.Context, r *pb.RegisterToolRequest) (*pb.RegisterToolResponse, error) {
	id, err := h.register("RegisterTool", r)
	return &pb.RegisterToolResponse{RegistrationId: id}, err
}

func (h *fakeHost) AddGuard(_ context.Context, r *pb.AddGuardRequest) (*pb.AddGuardResponse, error) {
	id, err := h.register("AddGuard", r)
	return &pb.AddGuardResponse{RegistrationId: id}, err
}

func (h *fakeHost) Listen(_ context.Context, r *pb.ListenRequest) (*pb.ListenResponse, error) {
	id, err := h.register("Listen", r)
	return &pb.ListenResponse{RegistrationId: id}, err
}

func (h *fakeHost) SetApprover(_ context.Context, r *pb.SetApproverRequest) (*pb.SetApproverResponse, error) {
	id, err := h.register("SetApprover", r)
	return &pb.SetApproverResponse{RegistrationId: id}, err
}

func (h *fakeHost) Provide(_ context.Context, r *pb.ProvideRequest) (*pb.ProvideResponse, error) {
	id, err := h.register("Provide", r)
	return &pb.ProvideResponse{RegistrationId: id}, err
}

func (h *fakeHost) Contribute(_ context.Context, r *pb.ContributeRequest) (*pb.ContributeResponse, error) {
	id, err := h.register("Contribute", r)
	return &pb.ContributeResponse{RegistrationId: id}, err
}

func (h *fakeHost) Dispose(_ context.Context, r *pb.DisposeRequest) (*pb.DisposeResponse, error) {
	return &pb.DisposeResponse{}, h.dispose(r.GetRegistrationId())
}

func (h *fakeHost) Next(ctx context.Context, r *pb.NextRequest) (*pb.NextResponse, error) {
	return h.next(ctx, r)
}

func (h *fakeHost) CallService(ctx context.Context, r *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error) {
	return h.callService(ctx, r)
}

func (h *fakeHost) ExecuteTool(ctx context.Context, r *pb.HostExecuteToolRequest) (*pb.HostExecuteToolResponse, error) {
	return h.executeTool(ctx, r)
}

// record is what the recording defaults saw.
type record struct {
	mu       sync.Mutex
	regs     []registration
	disposed []string
	nexts    []string
}

type registration struct {
	kind string
	id   string
	req  proto.Message
}

func (r *record) registrations() []registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]registration(nil), r.regs...)
}

func (r *record) disposals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.disposed...)
}

func (r *record) nextTokens() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.nexts...)
}

// last returns the newest registration of kind.
func (r *record) last(t *testing.T, kind string) registration {
	t.Helper()
	regs := r.registrations()
	for i := len(regs) - 1; i >= 0; i-- {
		if regs[i].kind == kind {
			return regs[i]
		}
	}
	t.Fatalf("no %s registration recorded (have %v)", kind, regs)
	return registration{}
}

// recordingHost returns a fakeHost whose unset behaviour records into rec:
// registrations get ids "reg-1", "reg-2", ...; Next is refused unless set.
func recordingHost(rec *record) *fakeHost {
	return &fakeHost{
		register: func(kind string, req proto.Message) (string, error) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			id := fmt.Sprintf("reg-%d", len(rec.regs)+1)
			rec.regs = append(rec.regs, registration{kind: kind, id: id, req: req})
			return id, nil
		},
		dispose: func(id string) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.disposed = append(rec.disposed, id)
			return nil
		},
		next: func(context.Context, *pb.NextRequest) (*pb.NextResponse, error) {
			return nil, fmt.Errorf("fake host: Next not set")
		},
		callService: func(context.Context, *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error) {
			return nil, fmt.Errorf("fake host: CallService not set")
		},
		executeTool: func(context.Context, *pb.HostExecuteToolRequest) (*pb.HostExecuteToolResponse, error) {
			return nil, fmt.Errorf("fake host: ExecuteTool not set")
		},
	}
}

// harness runs the plugin-side server and a fake host in-process, each on
// its own bufconn listener, wired the way go-plugin wires them: the plugin
// dials the host once at Apply.
type harness struct {
	plugin   pb.PluginClient
	srv      *server
	rec      *record
	dialedID chan uint32
}

const testBrokerID = 7

type harnessOptions struct {
	maxBytes int
	host     func(*record) *fakeHost
	// dialFailures makes the first dials fail as a knock does that reaches
	// the host before its callback listener exists.
	dialFailures int
}

func newHarness(t *testing.T, def *definition, opts harnessOptions) *harness {
	t.Helper()
	if opts.maxBytes == 0 {
		opts.maxBytes = wire.DefaultMaxMessageBytes
	}
	h := &harness{rec: &record{}, dialedID: make(chan uint32, 8)}
	host := recordingHost(h.rec)
	if opts.host != nil {
		host = opts.host(h.rec)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: def.name, Output: hclog.DefaultOutput, Level: hclog.Off})

	hostLis := bufconn.Listen(1 << 20)
	hostSrv := grpc.NewServer(wire.ServerOptions(opts.maxBytes)...)
	pb.RegisterHostServer(hostSrv, host)
	go func() { _ = hostSrv.Serve(hostLis) }()

	dial := func(id uint32, dopts ...grpc.DialOption) (*grpc.ClientConn, error) {
		h.dialedID <- id
		if opts.dialFailures > 0 {
			opts.dialFailures--
			return nil, fmt.Errorf("failed to knock for id %d: no listener for id %d", id, id)
		}
		return grpc.NewClient("passthrough:///host", append(dopts, bufDial(hostLis)...)...)
	}
	h.srv = newServer(def, log, opts.maxBytes, dial)

	pluginLis := bufconn.Listen(1 << 20)
	pluginSrv := grpc.NewServer(append(wire.ServerOptions(opts.maxBytes), recoverInterceptors(log)...)...)
	pb.RegisterPluginServer(pluginSrv, h.srv)
	go func() { _ = pluginSrv.Serve(pluginLis) }()

	conn, err := grpc.NewClient("passthrough:///plugin", append(wire.DialOptions(opts.maxBytes), bufDial(pluginLis)...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.plugin = pb.NewPluginClient(conn)
	t.Cleanup(func() {
		_ = conn.Close()
		pluginSrv.Stop()
		h.srv.close()
		hostSrv.Stop()
	})
	return h
}

// bufDial returns the options that dial l.
func bufDial(l *bufconn.Listener) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }),
	}
}

// testCtx bounds every test that can block.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	// A bound against a hang, not a measure: a test that moves 5 MiB
	// under the race detector on a loaded 2-core machine needs more than
	// ten seconds.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// applyWith builds a definition around apply (config type C), starts a
// harness and applies it with config.
func applyWith[C any](t *testing.T, opts harnessOptions, config string, apply func(ctx context.Context, p *Context, cfg C) error) *harness {
	t.Helper()
	def, err := Plugin[C]{Name: "test", Inject: []string{"tools"}, Provides: []string{"index", "idx"}, Apply: apply}.build()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, def, opts)
	resp, err := h.plugin.Apply(testCtx(t), &pb.ApplyRequest{ConfigJson: []byte(config), HostBrokerId: testBrokerID})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if resp.GetError() != "" {
		t.Fatalf("Apply failed: %s", resp.GetError())
	}
	return h
}

// execution is a frozen call for tests.
func execution(name, args string) *pb.Execution {
	return &pb.Execution{Id: "call-1", Name: name, ArgumentsJson: []byte(args), Caller: "tester",
		Tool: &pb.ToolDescriptor{Name: name, Description: "d", Owner: "test"}}
}
