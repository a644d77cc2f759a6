package kernel_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/kernel"
)

func TestDescribe(t *testing.T) {
	k, _ := newKernel(t)
	load(t, k, kernel.Plugin{Name: "indexer", Apply: func(_ context.Context, s *kernel.Scope) error {
		if _, err := s.Provide("index", 1); err != nil {
			return err
		}
		if _, err := s.Contribute("pt", "k", 0, 1); err != nil {
			return err
		}
		_, err := s.On("ev", func(context.Context, any, kernel.Next) (any, error) { return nil, nil })
		return err
	}})
	load(t, k, kernel.Plugin{Name: "dep", Inject: []string{"index", kernel.ServiceLogger}, Apply: noop})
	load(t, k, kernel.Plugin{Name: "waiter", Inject: []string{"search", kernel.ServicePoints, "index"}, Apply: noop})
	if _, err := k.Load(kernel.Plugin{Name: "broken", Apply: func(_ context.Context, s *kernel.Scope) error {
		if _, err := s.Contribute("pt", "b", 0, 1); err != nil {
			return err
		}
		return errBoom
	}}); err == nil {
		t.Fatal("broken loaded")
	}

	t.Run("scopes are listed in load order", func(t *testing.T) {
		var names []string
		for _, si := range k.Describe() {
			names = append(names, si.Name)
		}
		if want := []string{"indexer", "dep", "waiter", "broken"}; !slices.Equal(names, want) {
			t.Errorf("Describe lists %v, want %v", names, want)
		}
	})

	for _, tc := range []struct {
		name    string
		plugin  string
		want    kernel.ScopeInfo
		lastErr string
	}{
		{
			name:   "an active provider shows what it provides and its effects in order",
			plugin: "indexer",
			want: kernel.ScopeInfo{Name: "indexer", State: kernel.Active, Provides: []string{"index"},
				Effects: []string{"provide index", "contribute pt k", "on ev"}},
		},
		{
			name:   "an active dependent shows what it injects and waits for nothing",
			plugin: "dep",
			want:   kernel.ScopeInfo{Name: "dep", State: kernel.Active, Injects: []string{"index", kernel.ServiceLogger}},
		},
		{
			name:   "a pending plugin shows what it is waiting for",
			plugin: "waiter",
			want: kernel.ScopeInfo{Name: "waiter", State: kernel.Pending,
				Injects: []string{"search", kernel.ServicePoints, "index"}, Waiting: []string{"search"}},
		},
		{
			name:    "a failed plugin shows its last error and no effects",
			plugin:  "broken",
			want:    kernel.ScopeInfo{Name: "broken", State: kernel.Failed},
			lastErr: "boom",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := info(t, k, tc.plugin)
			if got.Name != tc.want.Name || got.State != tc.want.State {
				t.Errorf("%s is %v, want %v", got.Name, got.State, tc.want.State)
			}
			for _, f := range []struct {
				field     string
				got, want []string
			}{
				{"Provides", got.Provides, tc.want.Provides},
				{"Injects", got.Injects, tc.want.Injects},
				{"Waiting", got.Waiting, tc.want.Waiting},
				{"Effects", got.Effects, tc.want.Effects},
			} {
				if !slices.Equal(f.got, f.want) {
					t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
				}
			}
			if tc.lastErr == "" && got.LastError != "" {
				t.Errorf("LastError = %q, want none", got.LastError)
			}
			if !strings.Contains(got.LastError, tc.lastErr) {
				t.Errorf("LastError = %q, want one containing %q", got.LastError, tc.lastErr)
			}
		})
	}

	t.Run("a dependent whose provider left waits for it again", func(t *testing.T) {
		if err := k.Unload("indexer"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		got := info(t, k, "dep")
		if got.State != kernel.Pending || !slices.Equal(got.Waiting, []string{"index"}) || len(got.Effects) != 0 {
			t.Errorf("dep = %+v, want PENDING waiting for index with no effects", got)
		}
		if got := info(t, k, "waiter").Waiting; !slices.Equal(got, []string{"search", "index"}) {
			t.Errorf("waiter waits for %v, want [search index]", got)
		}
	})

	t.Run("the description is a copy", func(t *testing.T) {
		before := info(t, k, "waiter")
		before.Injects[0] = "changed"
		if got := info(t, k, "waiter").Injects[0]; got != "search" {
			t.Errorf("the scope's injects changed to %q through its description", got)
		}
	})
}
