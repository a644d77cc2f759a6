package sdk

import (
	"context"
	"slices"
	"strings"
	"testing"

	pb "github.com/plugkit-go/plugkit/shared/pb"
)

// TestGuardInShadow: a guard registered in shadow says so to the host,
// with its canary; one without a name, or a canary without shadow, is
// refused before anything is sent.
func TestGuardInShadow(t *testing.T) {
	check := func(context.Context, *Call) (string, error) { return "no", nil }
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		if _, err := p.AddGuard(ctx, Guard{Check: check, Shadow: true}); err == nil || !strings.Contains(err.Error(), "needs a Name") {
			t.Errorf("a nameless guard in shadow: %v", err)
		}
		if _, err := p.AddGuard(ctx, Guard{Name: "x", Check: check, EnforceFor: []string{"group:canary"}}); err == nil || !strings.Contains(err.Error(), "EnforceFor without Shadow") {
			t.Errorf("a canary without shadow: %v", err)
		}
		_, err := p.AddGuard(ctx, Guard{Name: "no-list", Check: check, Shadow: true, EnforceFor: []string{"group:canary"}})
		return err
	})
	reg := h.rec.last(t, "AddGuard").req.(*pb.AddGuardRequest)
	if reg.GetName() != "no-list" || !reg.GetShadow() || !slices.Equal(reg.GetEnforceFor(), []string{"group:canary"}) {
		t.Errorf("AddGuard request = %v", reg)
	}
}
