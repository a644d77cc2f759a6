package host

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// TestShadowChangeIsAnnounced: a reload that changes only the shadow
// rules tells OnShadowChanged's listeners (the MCP front end then tells
// the sessions whose lists change); one that leaves them as they were
// does not.
func TestShadowChangeIsAnnounced(t *testing.T) {
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{})
	t.Cleanup(func() { k.Close(); tools.Close() })
	if _, err := k.Load(tools.Plugin()); err != nil {
		t.Fatal(err)
	}
	h := &Host{k: k, tools: tools, log: hclog.NewNullLogger()}
	told := 0
	remove := h.OnShadowChanged("test", func() { told++ })
	defer remove()

	withShadow := func(sh ...deployment.Shadow) *deployment.Deployment {
		return &deployment.Deployment{Plugins: []deployment.Plugin{{Name: "safety", Shadow: sh}}}
	}
	steps := []struct {
		d    *deployment.Deployment
		told int
	}{
		{withShadow(), 0}, // none before, none after
		{withShadow(deployment.Shadow{Rules: []string{"no-list"}}), 1},
		{withShadow(deployment.Shadow{Rules: []string{"no-list"}}), 1}, // unchanged
		{withShadow(deployment.Shadow{Rules: []string{"no-list"}, EnforceFor: []string{"group:canary"}}), 2},
		{withShadow(), 3},
	}
	for i, s := range steps {
		if err := h.setShadow(s.d); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if told != s.told {
			t.Fatalf("step %d: told %d times, want %d", i, told, s.told)
		}
	}
}
