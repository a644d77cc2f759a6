package remote

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// TestElicitOnlyForItsOwnCalls: a plugin may ask a question only for a call
// in flight on one of its own tools; the question reaches the host's
// elicitor with that call, and ends when the call does.
func TestElicitOnlyForItsOwnCalls(t *testing.T) {
	asked := make(chan *pipeline.Execution, 1)
	block := make(chan struct{})
	in := &instance{name: "P", log: hclog.NewNullLogger()}
	in.elicit = func(ctx context.Context, e *pipeline.Execution, params json.RawMessage) (json.RawMessage, error) {
		asked <- e
		if string(params) == `{"mode":"form","message":"wait"}` {
			close(block)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"action":"accept","content":{"name":"Ann"}}`), nil
	}
	h := newHostService(in, nil)
	form := []byte(`{"mode":"form","message":"Your name?"}`)
	code := func(err error) codes.Code { return status.Code(err) }

	// Another plugin's call, or one that ended, is not this plugin's.
	if _, err := h.Elicit(t.Context(), &pb.HostElicitRequest{ExecutionId: "someone-else-1", ParamsJson: form}); code(err) != codes.FailedPrecondition {
		t.Fatalf("a call not in flight here: %v, want FAILED_PRECONDITION", err)
	}
	select {
	case <-asked:
		t.Fatal("the elicitor was asked for a call that is not the plugin's")
	default:
	}

	callCtx, endCall := context.WithCancel(t.Context())
	e := pipeline.NewExecution("c-1", "P_tool", "mcp#1", nil, `{}`)
	done := in.live.track(callCtx, e)
	if _, err := h.Elicit(t.Context(), &pb.HostElicitRequest{ExecutionId: "c-1", ParamsJson: []byte("{not json")}); code(err) != codes.InvalidArgument {
		t.Errorf("params that are not JSON: %v, want INVALID_ARGUMENT", err)
	}
	resp, err := h.Elicit(t.Context(), &pb.HostElicitRequest{ExecutionId: "c-1", ParamsJson: form})
	if err != nil || string(resp.GetResultJson()) != `{"action":"accept","content":{"name":"Ann"}}` {
		t.Fatalf("the call's question: %s %v", resp.GetResultJson(), err)
	}
	if got := <-asked; got != e {
		t.Errorf("the elicitor got call %s, want c-1", got.ID())
	}

	// The question ends with the call.
	errc := make(chan error, 1)
	go func() {
		_, err := h.Elicit(t.Context(), &pb.HostElicitRequest{ExecutionId: "c-1", ParamsJson: []byte(`{"mode":"form","message":"wait"}`)})
		errc <- err
	}()
	<-block
	<-asked
	endCall()
	if err := <-errc; code(err) != codes.Canceled {
		t.Errorf("a question whose call ended: %v, want CANCELED", err)
	}
	done()
	if _, err := h.Elicit(t.Context(), &pb.HostElicitRequest{ExecutionId: "c-1", ParamsJson: form}); code(err) != codes.FailedPrecondition {
		t.Errorf("a call that returned: %v, want FAILED_PRECONDITION", err)
	}

	// Without an elicitor in the host, every question is declined.
	bare := &instance{name: "Q", log: hclog.NewNullLogger()}
	defer bare.live.track(t.Context(), e)()
	resp, err = newHostService(bare, nil).Elicit(t.Context(), &pb.HostElicitRequest{ExecutionId: "c-1", ParamsJson: form})
	if err != nil || string(resp.GetResultJson()) != `{"action":"decline"}` {
		t.Errorf("no elicitor: %s %v, want a decline", resp.GetResultJson(), err)
	}
}
