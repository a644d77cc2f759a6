package pipeline

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// VisibleSet is the tools shown to one principal (Tools.Visible for each
// registered tool) as of one version of the pipeline. Read only.
type VisibleSet struct {
	gen uint64
	// shadows are the shadow rules it was computed with: a rule in shadow
	// hides nothing, so a change of them (a reload) computes it again.
	shadows *shadowSet
	names   map[string]struct{}
	// entries are the shown names that a front end does not list as
	// tools: entries of a kind (resources, prompts) and held tools.
	entries map[string]struct{}
	// prompts are the shown entries of kind prompt that are not held: what
	// a prompt list holds.
	prompts map[string]struct{}
}

// Has reports whether the tool called name is shown.
func (v *VisibleSet) Has(name string) bool {
	_, ok := v.names[name]
	return ok
}

// Len is how many tools are shown.
func (v *VisibleSet) Len() int { return len(v.names) }

// Names are the shown tools' names, sorted.
func (v *VisibleSet) Names() []string {
	out := make([]string, 0, len(v.names))
	for n := range v.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Generation is the version of the pipeline the set was computed for: two
// sets of one principal with the same generation are the same set.
func (v *VisibleSet) Generation() uint64 { return v.gen }

// Equal reports whether v and w show the same tools.
func (v *VisibleSet) Equal(w *VisibleSet) bool {
	if v == nil || w == nil {
		return v == w
	}
	if len(v.names) != len(w.names) {
		return false
	}
	for n := range v.names {
		if _, ok := w.names[n]; !ok {
			return false
		}
	}
	return true
}

// EqualTools reports whether v and w show the same tools as a tool list
// holds them: entries of a kind and held tools left out. A change of
// those alone changes no session's tools/list.
func (v *VisibleSet) EqualTools(w *VisibleSet) bool {
	if v == nil || w == nil {
		return v == w
	}
	if len(v.names)-len(v.entries) != len(w.names)-len(w.entries) {
		return false
	}
	for n := range v.names {
		if _, entry := v.entries[n]; entry {
			continue
		}
		_, shown := w.names[n]
		_, entry := w.entries[n]
		if !shown || entry {
			return false
		}
	}
	return true
}

// EqualPrompts reports whether v and w show the same prompts (the entries
// of kind prompt, held ones left out).
func (v *VisibleSet) EqualPrompts(w *VisibleSet) bool {
	if v == nil || w == nil {
		return v == w
	}
	if len(v.prompts) != len(w.prompts) {
		return false
	}
	for n := range v.prompts {
		if _, ok := w.prompts[n]; !ok {
			return false
		}
	}
	return true
}

// KindPrompt is the kind of a prompt entry (ToolInfo.Kind), as the MCP
// bridge registers its servers' prompts.
const KindPrompt = "prompt"

// maxVisibleSets bounds the cache: one entry per principal class seen since
// the pipeline last changed. Past it the cache starts over, which costs a
// recomputation, never a wrong answer.
const maxVisibleSets = 4096

// visibleCache keeps one VisibleSet per principal class for the current
// version of the pipeline. Any change to the pipeline (a tool, a listener,
// a plugin's rules, which come with its listeners) makes a new snapshot
// generation, and a set of an older generation is computed again when it
// is next asked for: nothing is invalidated by hand.
type visibleCache struct {
	mu   sync.Mutex
	sets map[string]*visibleEntry
}

type visibleEntry struct {
	once sync.Once
	set  atomic.Pointer[VisibleSet]
}

// principalClass is the cache key: everything about a principal the
// visibility question may read (kind, id, attributes in any order).
// Principals of one class see the same tools.
func principalClass(p Principal) string {
	attrs := slices.Clone(p.Attributes)
	slices.Sort(attrs)
	var b strings.Builder
	b.WriteString(p.Kind)
	b.WriteByte(0)
	b.WriteString(p.ID)
	for _, a := range attrs {
		b.WriteByte(0)
		b.WriteString(a)
	}
	return b.String()
}

// VisibleSet returns the tools shown to p, from the cache when the
// pipeline has not changed since it was computed for p's class. Each
// class's set is computed once per version of the pipeline, however many
// ask for it at once.
func (t *Tools) VisibleSet(ctx context.Context, p Principal) *VisibleSet {
	s := t.acquire()
	defer s.inflight.Add(-1)
	return t.visibleSet(ctx, s, p)
}

// visibleSet is VisibleSet on snapshot s.
func (t *Tools) visibleSet(ctx context.Context, s *snapshot, p Principal) *VisibleSet {
	key := principalClass(p)
	t.seen.mu.Lock()
	ent := t.seen.sets[key]
	shadows := t.shadowsFor(s)
	if old := ent.loaded(); ent == nil || (old != nil && (old.gen != s.gen || old.shadows != shadows)) {
		if t.seen.sets == nil || len(t.seen.sets) >= maxVisibleSets {
			t.seen.sets = map[string]*visibleEntry{}
		}
		ent = &visibleEntry{}
		t.seen.sets[key] = ent
	}
	t.seen.mu.Unlock()
	ent.once.Do(func() { ent.set.Store(t.computeVisible(ctx, s, p)) })
	if set := ent.set.Load(); set.gen == s.gen && set.shadows == shadows {
		return set
	}
	// Computed by another caller for another snapshot than ours.
	return t.computeVisible(ctx, s, p)
}

func (e *visibleEntry) loaded() *VisibleSet {
	if e == nil {
		return nil
	}
	return e.set.Load()
}

// computeVisible asks the visibility question of every registered tool.
func (t *Tools) computeVisible(ctx context.Context, s *snapshot, p Principal) *VisibleSet {
	// The set outlives the request that first asked for it: its
	// cancellation must not make a listener's answer a failure.
	ctx = WithPrincipal(context.WithoutCancel(ctx), p)
	v := &VisibleSet{gen: s.gen, shadows: t.shadowsFor(s), names: make(map[string]struct{}, len(s.tools))}
	for name, reg := range s.tools {
		if t.visible(ctx, s, p, name).Shown {
			v.names[name] = struct{}{}
			if reg.info.Kind != "" || reg.info.Held != "" {
				if v.entries == nil {
					v.entries = map[string]struct{}{}
				}
				v.entries[name] = struct{}{}
			}
			if reg.info.Kind == KindPrompt && reg.info.Held == "" {
				if v.prompts == nil {
					v.prompts = map[string]struct{}{}
				}
				v.prompts[name] = struct{}{}
			}
		}
	}
	return v
}
