package remote

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// TestExecutionByRef: a descriptor goes whole until the plugin answered a
// request that carried it, then by ref alone; on the ordered observer queue,
// whole once, then by ref; to a plugin that does not keep refs, always
// whole.
func TestExecutionByRef(t *testing.T) {
	info, ok := newTestTools(t).Lookup("t")
	if !ok || info.Revision() == 0 {
		t.Fatalf("registered tool has no revision: %+v", info)
	}
	e := pipeline.NewExecution("1", "t", "c", &info, "{}")

	in := &instance{connection: connection{refs: &toolRefs{}}}
	x, seen := in.execution(e)
	if x.GetTool() == nil || x.GetToolRef() != info.Revision() {
		t.Fatalf("first request: tool %v ref %d", x.GetTool(), x.GetToolRef())
	}
	if x, _ := in.execution(e); x.GetTool() == nil {
		t.Fatal("a request before the plugin answered went by ref alone")
	}
	seen()
	if x, _ := in.execution(e); x.GetTool() != nil || x.GetToolRef() != info.Revision() {
		t.Fatalf("after the answer: tool %v ref %d", x.GetTool(), x.GetToolRef())
	}

	obs := &instance{connection: connection{refs: &toolRefs{}}}
	if x := obs.observedExecution(e); x.GetTool() == nil {
		t.Fatal("the first queued result went by ref alone")
	}
	if x := obs.observedExecution(e); x.GetTool() != nil || x.GetToolRef() == 0 {
		t.Fatal("a later queued result carried the descriptor again")
	}

	old := &instance{}
	for range 2 {
		x, seen := old.execution(e)
		seen()
		if x.GetTool() == nil || x.GetToolRef() != 0 {
			t.Fatal("a plugin that keeps no refs was sent one")
		}
	}
}

// newTestTools is a pipeline with one tool, "t", registered.
func newTestTools(t *testing.T) *pipeline.Tools {
	t.Helper()
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{})
	t.Cleanup(func() { k.Close(); tools.Close() })
	if _, err := k.Load(tools.Plugin()); err != nil {
		t.Fatal(err)
	}
	_, err := k.Load(kernel.Plugin{Name: "p", Inject: []string{"tools"}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		_, err = reg.Register(pipeline.Tool{ToolDescriptor: wire.ToolDescriptor{Name: "t", Description: "d"}, Execute: func(context.Context, *pipeline.Execution) (any, error) { return nil, nil }})
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	return tools
}
