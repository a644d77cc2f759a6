package remote_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/remote"
)

// TestToolDescriptorByRef: a plugin that keeps descriptors by ref is sent a
// tool's descriptor once and then the ref alone; its tool still sees the
// whole descriptor on every call, sequential or concurrent, and a tool
// registered again (a new ref) is seen as it is now.
func TestToolDescriptorByRef(t *testing.T) {
	h := newHost(t, conformance.Config{}, remote.Options{})
	schema := `{"type":"object","properties":{"q":{"type":"string","description":"what to look for"}}}`
	tool := func(desc string) conformance.PluginSpec {
		return conformance.PluginSpec{Name: "d", Tools: []conformance.ToolSpec{{
			Name: "describe_me", Description: desc, Parameters: schema, Body: conformance.BodyDescriptor,
		}}}
	}
	check := func(t *testing.T, desc string) {
		t.Helper()
		r := call(testkit.ContextFor(t, 10*time.Second), h, "describe_me", `{"q":"x"}`)
		var got struct {
			Name, Description string
			Parameters        json.RawMessage
		}
		if err := json.Unmarshal([]byte(valueOf(r)), &got); err != nil {
			t.Fatalf("%s: %v", describe(r), err)
		}
		var want, have any
		_ = json.Unmarshal([]byte(schema), &want)
		_ = json.Unmarshal(got.Parameters, &have)
		if got.Name != "describe_me" || got.Description != desc || !jsonEqual(want, have) {
			t.Errorf("the tool saw %+v", got)
		}
	}
	mustLoad(t, h, tool("first"), pluginConfig{})
	for range 3 {
		check(t, "first")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { check(t, "first") })
	}
	wg.Wait()

	h.Unload(t, "d")
	mustLoad(t, h, tool("second"), pluginConfig{})
	for range 2 {
		check(t, "second")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
