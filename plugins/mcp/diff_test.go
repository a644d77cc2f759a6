package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

func TestDiffList(t *testing.T) {
	spec := func(name, desc string) sdk.Tool { return sdk.Tool{Name: "p_" + name, Description: desc} }
	have := map[string]*bridged{}
	want := map[string]sdk.Tool{}
	for i := range 1000 {
		n := fmt.Sprint("t", i)
		have[n] = &bridged{spec: spec(n, "d")}
		want[n] = spec(n, "d")
	}
	if d := diffList(have, want); len(d.add) != 0 || len(d.drop) != 0 {
		t.Fatalf("unchanged list: %+v", d)
	}
	want["t7"] = spec("t7", "changed")
	delete(want, "t8")
	want["new"] = spec("new", "d")
	d := diffList(have, want)
	var added []string
	for _, a := range d.add {
		added = append(added, a.Name)
	}
	if !slices.Equal(added, []string{"p_new", "p_t7"}) || !slices.Equal(d.drop, []string{"t7", "t8"}) {
		t.Fatalf("diff = add %v, drop %v; want add [p_new p_t7], drop [t7 t8]", added, d.drop)
	}
}

// A change of one tool is one batch of one tool: the others are not
// registered again.
func TestBridgeListChangeIsOneBatch(t *testing.T) {
	m := startInMemory(t, Config{Command: []string{"unused"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	count := func() (int, int) {
		m.host.mu.Lock()
		defer m.host.mu.Unlock()
		return m.host.batches, m.host.registered
	}
	batches, registered := count()
	if batches != 1 {
		t.Fatalf("start: %d batches, want 1", batches)
	}
	if _, err := m.call(t, ctx, "set_tool", `{"name":"late","description":"first"}`); err != nil {
		t.Fatal(err)
	}
	m.host.waitFor(t, "late registered", func() bool { _, ok := m.host.tool("late"); return ok })
	b, r := count()
	if b-batches != 1 || r-registered != 1 {
		t.Errorf("one added tool: %d batches, %d tools registered; want 1 and 1", b-batches, r-registered)
	}
}
