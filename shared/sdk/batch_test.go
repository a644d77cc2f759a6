package sdk

import (
	"context"
	"testing"
)

// With a host that predates RegisterTools (the fake answers UNIMPLEMENTED),
// the batch falls back to disposing the replaced handles and registering
// the tools one by one; a tool the SDK itself refuses is refused alone.
func TestRegisterToolsOnAnOlderHost(t *testing.T) {
	noop := func(context.Context, *Call) (any, error) { return nil, nil }
	var first, second []*Handle
	var errs []error
	h := applyWith(t, harnessOptions{}, `{"greeting":"hi"}`, func(ctx context.Context, p *Context, _ greeterConfig) error {
		var err error
		first, _, err = p.RegisterTools(ctx, []Tool{{Name: "a", Description: "d", Execute: noop}, {Name: "b", Description: "d", Execute: noop}}, nil)
		if err != nil {
			return err
		}
		second, errs, err = p.RegisterTools(ctx, []Tool{{Name: "a", Description: "changed", Execute: noop}, {Name: "", Execute: noop}}, first[:1])
		return err
	})
	if len(first) != 2 || first[0] == nil || first[1] == nil {
		t.Fatalf("first batch: %v", first)
	}
	if second[0] == nil || second[1] != nil || errs == nil || errs[0] != nil || errs[1] == nil {
		t.Fatalf("second batch: handles %v, errs %v", second, errs)
	}
	var names []string
	for _, r := range h.rec.registrations() {
		if r.kind == "RegisterTool" {
			names = append(names, r.id)
		}
	}
	if len(names) != 3 {
		t.Errorf("RegisterTool calls: %v, want 3", names)
	}
	if d := h.rec.disposals(); len(d) != 1 || d[0] != first[0].ID() {
		t.Errorf("disposed %v, want [%s]", d, first[0].ID())
	}
}
