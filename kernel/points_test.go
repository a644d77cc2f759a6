package kernel_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/kernel"
)

// contribution is one add made by a test plugin.
type contribution struct {
	key   string
	order int
	value string
}

// contributor loads a plugin that contributes cs to point, in order.
func contributor(t *testing.T, k *kernel.Kernel, name, point string, cs ...contribution) *kernel.Scope {
	t.Helper()
	return load(t, k, kernel.Plugin{Name: name, Apply: func(_ context.Context, s *kernel.Scope) error {
		for _, c := range cs {
			if _, err := s.Contribute(point, c.key, c.order, c.value); err != nil {
				return err
			}
		}
		return nil
	}})
}

func values(cs []kernel.Contribution) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Value)
	}
	return out
}

func TestPoints(t *testing.T) {
	t.Run("all is by order, then oldest first", func(t *testing.T) {
		k, _ := newKernel(t)
		contributor(t, k, "a", "pt", contribution{order: 10, value: "a10"}, contribution{order: 0, value: "a0"})
		contributor(t, k, "b", "pt", contribution{order: 10, value: "b10"}, contribution{order: -5, value: "b-5"}, contribution{order: 0, value: "b0"})
		want := []any{"b-5", "a0", "b0", "a10", "b10"}
		if got := values(k.Points().All("pt")); !slices.Equal(got, want) {
			t.Errorf("All = %v, want %v", got, want)
		}
		all := k.Points().All("pt")
		if all[0].Owner != "b" || all[0].Order != -5 {
			t.Errorf("first contribution = %+v, want b's at order -5", all[0])
		}
	})

	t.Run("all returns a copy", func(t *testing.T) {
		k, _ := newKernel(t)
		contributor(t, k, "a", "pt", contribution{value: "a"})
		all := k.Points().All("pt")
		all[0].Value = "changed"
		if got := k.Points().All("pt")[0].Value; got != "a" {
			t.Errorf("the point holds %v after its copy changed", got)
		}
	})

	t.Run("get is the newest contribution with the key", func(t *testing.T) {
		k, _ := newKernel(t)
		contributor(t, k, "old", "pt", contribution{key: "k", order: 5, value: "old"}, contribution{key: "other", value: "other"})
		contributor(t, k, "new", "pt", contribution{key: "k", order: -5, value: "new"})
		if c, ok := k.Points().Get("pt", "k"); !ok || c.Value != "new" || c.Owner != "new" {
			t.Errorf("Get = %+v, %v; want new's", c, ok)
		}
		if err := k.Unload("new"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if c, ok := k.Points().Get("pt", "k"); !ok || c.Value != "old" {
			t.Errorf("Get after the newest left = %+v, %v; want old's", c, ok)
		}
		if _, ok := k.Points().Get("pt", "missing"); ok {
			t.Error("Get found a key nobody contributed")
		}
	})

	t.Run("last is the newest contribution", func(t *testing.T) {
		k, _ := newKernel(t)
		if _, ok := k.Points().Last("pt"); ok {
			t.Error("Last found something in an empty point")
		}
		contributor(t, k, "first", "pt", contribution{order: 10, value: "first"})
		contributor(t, k, "second", "pt", contribution{order: -10, value: "second"})
		if c, ok := k.Points().Last("pt"); !ok || c.Value != "second" {
			t.Errorf("Last = %+v, %v; want second's (newest, whatever its order)", c, ok)
		}
		if err := k.Unload("second"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if c, ok := k.Points().Last("pt"); !ok || c.Value != "first" {
			t.Errorf("Last after the newest left = %+v, %v; want first's", c, ok)
		}
	})

	t.Run("a point exists while it has contributions", func(t *testing.T) {
		k, _ := newKernel(t)
		if k.Points().Exists("pt") {
			t.Fatal("an untouched point exists")
		}
		var effects []*kernel.Effect
		load(t, k, kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
			for range 2 {
				e, err := s.Contribute("pt", "", 0, 1)
				if err != nil {
					return err
				}
				effects = append(effects, e)
			}
			return nil
		}})
		for i, e := range effects {
			if !k.Points().Exists("pt") {
				t.Fatalf("the point does not exist with %d contributions", len(effects)-i)
			}
			if err := e.Undo(); err != nil {
				t.Fatalf("undo: %v", err)
			}
		}
		if k.Points().Exists("pt") {
			t.Error("the point exists without contributions")
		}
		if got := k.Points().All("pt"); len(got) != 0 {
			t.Errorf("All = %v, want none", got)
		}
	})

	t.Run("a unique point refuses a second contribution with the same key", func(t *testing.T) {
		k, _ := newKernel(t)
		k.Points().DeclareUnique("tools")
		contributor(t, k, "owner", "tools", contribution{key: "search", value: "owner's"})
		_, err := k.Load(kernel.Plugin{Name: "intruder", Apply: func(_ context.Context, s *kernel.Scope) error {
			if _, err := s.Contribute("tools", "fetch", 0, "intruder's fetch"); err != nil {
				t.Errorf("a different key was refused: %v", err)
			}
			_, err := s.Contribute("tools", "search", 0, "intruder's")
			return err
		}})
		if err == nil {
			t.Fatal("the second contribution of search was accepted")
		}
		for _, want := range []string{"tools", "search", "owner", "intruder"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		all := k.Points().All("tools")
		if len(all) != 1 || all[0].Owner != "owner" {
			t.Errorf("tools = %+v, want only owner's search (the intruder failed)", all)
		}
		// Once the owner is gone the key is free.
		if err := k.Unload("owner"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		contributor(t, k, "successor", "tools", contribution{key: "search", value: "successor's"})
		if c, ok := k.Points().Get("tools", "search"); !ok || c.Owner != "successor" {
			t.Errorf("Get = %+v, %v; want successor's", c, ok)
		}
	})

	t.Run("a point not declared unique keeps every contribution of a key", func(t *testing.T) {
		k, _ := newKernel(t)
		contributor(t, k, "a", "pt", contribution{key: "k", value: "a"})
		contributor(t, k, "b", "pt", contribution{key: "k", value: "b"})
		if got := values(k.Points().All("pt")); !slices.Equal(got, []any{"a", "b"}) {
			t.Errorf("All = %v, want [a b]", got)
		}
	})

	t.Run("watch is notified on add and on removal", func(t *testing.T) {
		k, _ := newKernel(t)
		var pt, other counter
		var seen []int
		stop := k.Points().Watch("pt", func() {
			pt.inc()
			seen = append(seen, len(k.Points().All("pt")))
		})
		defer stop()
		stopOther := k.Points().Watch("other", other.inc)
		defer stopOther()
		s := contributor(t, k, "p", "pt", contribution{value: "one"})
		e := must(t)(s.Contribute("pt", "", 0, "two"))
		if err := e.Undo(); err != nil {
			t.Fatalf("undo: %v", err)
		}
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if got, want := seen, []int{1, 2, 1, 0}; !slices.Equal(got, want) {
			t.Errorf("the watcher saw sizes %v, want %v", got, want)
		}
		if other.get() != 0 {
			t.Error("a watcher of another point was notified")
		}
		stop()
		contributor(t, k, "q", "pt", contribution{value: "after"})
		if got := pt.get(); got != 4 {
			t.Errorf("the watcher was notified %d times, want 4 (none after cancel)", got)
		}
	})

	t.Run("contributions vanish with their plugin", func(t *testing.T) {
		k, _ := newKernel(t)
		contributor(t, k, "stays", "pt", contribution{key: "s", value: "stays"})
		load(t, k, kernel.Plugin{Name: "leaves", Apply: func(_ context.Context, s *kernel.Scope) error {
			for _, pt := range []string{"pt", "pt", "pt2"} {
				if _, err := s.Contribute(pt, "", 0, "leaves"); err != nil {
					return err
				}
			}
			return nil
		}})
		if err := k.Unload("leaves"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if got := values(k.Points().All("pt")); !slices.Equal(got, []any{"stays"}) {
			t.Errorf("All = %v, want [stays]", got)
		}
		if k.Points().Exists("pt2") {
			t.Error("a point only the leaving plugin contributed to still exists")
		}
	})
}

// TestUndoTellsWatchersOnce: a scope undone with many contributions wakes
// a point's watcher once, after the last removal, and what the watcher
// reads then has none of them; a removal outside an undo still wakes it at
// once.
func TestUndoTellsWatchersOnce(t *testing.T) {
	k := kernel.New(hclog.NewNullLogger())
	defer k.Close()
	var (
		mu     sync.Mutex
		wakes  int
		seenAt []int
	)
	stop := k.Points().Watch("many", func() {
		mu.Lock()
		defer mu.Unlock()
		wakes++
		seenAt = append(seenAt, len(k.Points().All("many")))
	})
	defer stop()
	var one *kernel.Effect
	if _, err := k.Load(kernel.Plugin{Name: "p", Apply: func(ctx context.Context, s *kernel.Scope) error {
		for i := range 100 {
			e, err := s.Contribute("many", "", 0, i)
			if err != nil {
				return err
			}
			one = e
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	wakes, seenAt = 0, nil
	mu.Unlock()
	if err := one.Undo(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if wakes != 1 || seenAt[0] != 99 {
		t.Errorf("one removal outside an undo: %d wakes, seeing %v; want one, seeing 99", wakes, seenAt)
	}
	wakes, seenAt = 0, nil
	mu.Unlock()
	if err := k.Unload("p"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if wakes != 1 || seenAt[0] != 0 {
		t.Errorf("undoing 99 contributions: %d wakes, seeing %v; want one, seeing none left", wakes, seenAt)
	}
}
