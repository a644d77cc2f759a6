package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

type procConfig struct {
	Greeting string `json:"greeting"`
}

// processTestPlugin is the plugin the test binary serves in the "plugin"
// roles. With noisy set it writes to the stdout it had before Serve while
// go-plugin starts up, as a library that kept os.Stdout would: the handshake
// must survive. The writes start once Serve has redirected fd 1, since
// nothing can protect output printed before Serve runs.
func processTestPlugin(noisy bool) Plugin[procConfig] {
	if noisy {
		stdout := os.Stdout
		go func() {
			for !fdIsStderr(1) {
				time.Sleep(100 * time.Microsecond)
			}
			for range 200 {
				fmt.Fprintln(stdout, "noise on stdout")
				time.Sleep(time.Millisecond)
			}
		}()
	}
	return Plugin[procConfig]{
		Name: "proc", Version: "9.9.9", Inject: []string{"tools"},
		Apply: func(ctx context.Context, p *Context, cfg procConfig) error {
			if _, err := p.RegisterTool(ctx, Tool{Name: "blob", Description: "returns n bytes",
				Execute: func(_ context.Context, c *Call) (any, error) {
					var n int
					if err := c.Bind(&n); err != nil {
						return nil, err
					}
					return strings.Repeat("x", n), nil
				}}); err != nil {
				return err
			}
			_, err := p.OnPreExecute(ctx, PreExecuteListener{Name: cfg.Greeting, Wrap: func(ctx context.Context, _ *Call, next NextDecision) (Decision, error) {
				d, err := next(ctx)
				if err != nil {
					return Decision{}, err
				}
				return Deny("outer saw: " + d.Reason), nil
			}})
			return err
		},
	}
}

// syncBuffer collects the host's log, which go-plugin writes from several
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func pluginCommand(role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{roleEnv + "=" + role}, env...)...)
	return cmd
}

// TestProcess runs the plugin as a real process under go-plugin, the way the
// host will: handshake despite stdout noise, Describe, the broker callback
// connection, results above gRPC's 4 MiB default, the size limit's clear
// error, Next across the process boundary, and a graceful Shutdown.
func TestProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	const limit = 8 << 20
	var logs syncBuffer
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.ClientPlugins(limit),
		Cmd:              pluginCommand("plugin", wire.MaxMessageEnv(limit)),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions:  wire.DialOptions(limit),
		Logger:           hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug}),
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("handshake failed: %v\n%s", err, logs.String())
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	pc := raw.(*wire.PluginClient)
	ctx := testCtx(t)

	desc, err := pc.Describe(ctx, &pb.DescribeRequest{})
	if err != nil || desc.GetName() != "proc" || desc.GetVersion() != "9.9.9" {
		t.Fatalf("Describe = %v, %v", desc, err)
	}

	rec := &record{}
	host := recordingHost(rec)
	host.next = func(_ context.Context, req *pb.NextRequest) (*pb.NextResponse, error) {
		return &pb.NextResponse{Answer: &pb.NextResponse_PreExecute{PreExecute: &pb.Decision{
			Verdict: pb.Verdict_VERDICT_ALLOW, Reason: "inner " + req.GetCallToken()}}}, nil
	}
	applied, err := pc.Apply(ctx, &pb.ApplyRequest{ConfigJson: []byte(`{"greeting":"wrapper"}`), HostBrokerId: pc.ServeHost(host)})
	if err != nil || applied.GetError() != "" {
		t.Fatalf("Apply = %v, %v", applied, err)
	}
	tool := rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest).GetHandlerId()
	listener := rec.last(t, "Listen").req.(*pb.ListenRequest).GetHandlerId()

	t.Run("a result above gRPC's 4 MiB default", func(t *testing.T) {
		n, _ := json.Marshal(5 << 20)
		resp, err := pc.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: tool, Execution: execution("blob", string(n))})
		if err != nil || resp.GetError() != "" || len(resp.GetValueJson()) != 5<<20+2 {
			t.Fatalf("err %v, error %q, %d bytes", err, resp.GetError(), len(resp.GetValueJson()))
		}
	})
	t.Run("a result above the configured limit is a clear error", func(t *testing.T) {
		n, _ := json.Marshal(limit)
		resp, err := pc.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: tool, Execution: execution("blob", string(n))})
		if err != nil {
			t.Fatalf("transport error: %v", err)
		}
		size := proto.Size(&pb.ExecuteToolResponse{ValueJson: make([]byte, limit+2)})
		if want := fmt.Sprintf(`result of tool "blob" is %d bytes, over the %d-byte message limit`, size, limit); resp.GetError() != want {
			t.Errorf("error = %q, want %q", resp.GetError(), want)
		}
	})
	t.Run("a wrapper's next crosses back to the host", func(t *testing.T) {
		resp, err := pc.PreExecute(ctx, &pb.PreExecuteRequest{HandlerId: listener, Execution: execution("blob", "1"), CallToken: "tok-proc"})
		if err != nil || resp.GetDecision().GetReason() != "outer saw: inner tok-proc" {
			t.Errorf("PreExecute = %v, %v", resp, err)
		}
	})

	if resp, err := pc.Shutdown(ctx, &pb.ShutdownRequest{}); err != nil || resp.GetError() != "" {
		t.Errorf("Shutdown = %v, %v", resp, err)
	}
	client.Kill()
	if !client.Exited() {
		t.Error("plugin still running after Kill")
	}
	if !strings.Contains(logs.String(), "noise on stdout") {
		t.Errorf("the stdout noise did not reach the host's log through stderr:\n%s", logs.String())
	}
}

func TestServeBadDefinition(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	var stderr bytes.Buffer
	cmd := pluginCommand("bad-plugin")
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1", err)
	}
	for _, want := range []string{"cannot be served", "Name is empty", "Apply is nil", "Inject[0] is empty"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not mention %q", stderr.String(), want)
		}
	}
}
