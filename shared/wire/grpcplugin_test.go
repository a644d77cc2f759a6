package wire

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/plugkit-go/plugkit/shared/pb"
)

type describeOnly struct {
	pb.UnimplementedPluginServer
	broker chan *plugin.GRPCBroker
}

func (d *describeOnly) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return &pb.DescribeResponse{Name: "glue", ProtocolVersion: ProtocolVersion}, nil
}

type disposeRecorder struct {
	pb.UnimplementedHostServer
	got chan string
}

func (h *disposeRecorder) Dispose(_ context.Context, r *pb.DisposeRequest) (*pb.DisposeResponse, error) {
	h.got <- r.GetRegistrationId()
	return &pb.DisposeResponse{}, nil
}

// TestGRPCPlugin connects both halves of the go-plugin glue in one process:
// the host dispenses a typed *PluginClient, serves its callback service on
// the broker, and the plugin side dials it with the broker id, as the SDK
// does at Apply.
func TestGRPCPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	impl := &describeOnly{broker: make(chan *plugin.GRPCBroker, 1)}
	set := plugin.PluginSet{PluginName: &GRPCPlugin{
		MaxMessageBytes: 8 << 20,
		PluginServer: func(b *plugin.GRPCBroker) pb.PluginServer {
			impl.broker <- b
			return impl
		},
	}}
	client, server := plugin.TestPluginGRPCConn(t, false, set)
	// The server stops first. client.Close asks the server to stop itself
	// (go-plugin's controller Shutdown runs GRPCServer.Stop on a handler
	// goroutine), and GRPCServer.Stop is not safe to run twice at once: a
	// Stop of our own after Close raced that one. Once the server has
	// stopped, Close's request fails and only closes the client side.
	defer func() {
		server.Stop()
		client.Close()
	}()

	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := raw.(*PluginClient)
	if !ok {
		t.Fatalf("Dispense returned %T, want *PluginClient", raw)
	}
	if pc.MaxMessageBytes != 8<<20 {
		t.Errorf("MaxMessageBytes = %d", pc.MaxMessageBytes)
	}
	desc, err := pc.Describe(ctx, &pb.DescribeRequest{})
	if err != nil || desc.GetName() != "glue" {
		t.Fatalf("Describe = %v, %v", desc, err)
	}

	host := &disposeRecorder{got: make(chan string, 1)}
	id := pc.ServeHost(host)
	conn, err := (<-impl.broker).DialWithOptions(id, DialOptions(8<<20)...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pb.NewHostClient(conn).Dispose(ctx, &pb.DisposeRequest{RegistrationId: "reg-1"}); err != nil {
		t.Fatal(err)
	}
	if got := <-host.got; got != "reg-1" {
		t.Errorf("host saw %q", got)
	}
}

func TestGRPCPluginWithoutServer(t *testing.T) {
	if err := (&GRPCPlugin{}).GRPCServer(nil, nil); err == nil {
		t.Error("a GRPCPlugin without PluginServer served nothing silently")
	}
}
