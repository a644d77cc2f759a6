package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// fakePlugin is a test plugin made of function fields: each non-nil field is
// registered, in the order of the fields, limited to only when it is set.
type fakePlugin struct {
	name     string
	tools    []pipeline.Tool
	pre      pipeline.PreExecuteFunc
	guard    pipeline.GuardFunc
	exec     pipeline.ExecuteFunc
	post     pipeline.PostExecuteFunc
	result   pipeline.ResultFunc
	approver pipeline.ApproverFunc
	only     []string
	// apply runs last, for anything else; it may keep the registrar.
	apply func(reg *pipeline.Registrar) error
}

func (f fakePlugin) plugin() kernel.Plugin {
	return kernel.Plugin{
		Name:   f.name,
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			var errs []error
			add := func(_ *kernel.Effect, err error) { errs = append(errs, err) }
			for _, tool := range f.tools {
				add(reg.Register(tool))
			}
			if f.pre != nil {
				add(reg.OnPreExecute(f.pre, f.only...))
			}
			if f.guard != nil {
				add(reg.Guard(f.guard, f.only...))
			}
			if f.exec != nil {
				add(reg.OnExecute(f.exec, f.only...))
			}
			if f.post != nil {
				add(reg.OnPostExecute(f.post, f.only...))
			}
			if f.result != nil {
				add(reg.OnResult(f.result, f.only...))
			}
			if f.approver != nil {
				add(reg.SetApprover(f.approver))
			}
			if f.apply != nil {
				errs = append(errs, f.apply(reg))
			}
			return errors.Join(errs...)
		},
	}
}

// newTools returns a kernel with the tools service loaded, closed at the end
// of the test.
func newTools(t testing.TB, opts pipeline.Options) (*kernel.Kernel, *pipeline.Tools) {
	t.Helper()
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, opts)
	t.Cleanup(func() {
		k.Close()
		tools.Close()
	})
	if _, err := k.Load(tools.Plugin()); err != nil {
		t.Fatalf("load tools: %v", err)
	}
	return k, tools
}

// load loads plugins into k, failing t on an error.
func load(t testing.TB, k *kernel.Kernel, plugins ...kernel.Plugin) {
	t.Helper()
	for _, p := range plugins {
		if _, err := k.Load(p); err != nil {
			t.Fatalf("load %s: %v", p.Name, err)
		}
	}
}

const addSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// addArgs is what the add tool decodes.
type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func addBody(ctx context.Context, e *pipeline.Execution) (any, error) {
	var in addArgs
	if err := e.Decode(&in); err != nil {
		return nil, err
	}
	return in.A + in.B, nil
}

func addTool() pipeline.Tool {
	return pipeline.Tool{ToolDescriptor: wire.ToolDescriptor{Name: "add", Description: "Adds a and b.", Parameters: json.RawMessage(addSchema)}, Execute: addBody}
}

// tool is a tool named name with body fn and no schema.
func tool(name string, fn pipeline.ToolFunc) pipeline.Tool {
	return pipeline.Tool{ToolDescriptor: wire.ToolDescriptor{Name: name, Description: "Test tool " + name + "."}, Execute: fn}
}

func okBody(v any) pipeline.ToolFunc {
	return func(context.Context, *pipeline.Execution) (any, error) { return v, nil }
}

// recorder is a stage-5 observer that keeps what it saw.
type recorder struct {
	mu   sync.Mutex
	seen []observed
}

type observed struct {
	name, caller, args string
	result             pipeline.Result
	ctxErr             error
}

func (r *recorder) observe(ctx context.Context, e *pipeline.Execution, res pipeline.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, observed{name: e.Name(), caller: e.Caller(), args: e.ArgumentsJSON(), result: res, ctxErr: ctx.Err()})
	return nil
}

func (r *recorder) all() []observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observed(nil), r.seen...)
}

func (r *recorder) plugin() kernel.Plugin {
	return fakePlugin{name: "recorder", result: r.observe}.plugin()
}

func wantCode(t testing.TB, r pipeline.Result, code pipeline.Code) {
	t.Helper()
	if r.Code() != code || (code == "") != r.OK {
		t.Fatalf("result = %+v (error %v), want code %q", r, r.Error, code)
	}
}

// counter is a concurrency-safe count.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// recv receives from ch, failing t when ctx ends first.
func recv[T any](t testing.TB, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("gave up waiting: %v", ctx.Err())
		panic("unreachable")
	}
}
