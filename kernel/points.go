package kernel

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
)

// A Contribution is one value added to an extension point.
type Contribution struct {
	Key   string
	Order int
	Value any
	// Owner is the plugin that contributed it.
	Owner string
	seq   uint64
}

// Points is a set of named collections that plugins contribute to. A point
// exists while it has contributions. Read methods return copies.
type Points struct {
	mu       sync.Mutex
	seq      uint64
	items    map[string][]Contribution // sorted by Order, then age
	unique   map[string]bool
	watchers map[string]map[uint64]func()
}

func newPoints() *Points {
	return &Points{
		items:    map[string][]Contribution{},
		unique:   map[string]bool{},
		watchers: map[string]map[uint64]func(){},
	}
}

// DeclareUnique makes the point refuse a second contribution with a key it
// already holds.
func (p *Points) DeclareUnique(point string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unique[point] = true
}

// Add contributes a value that belongs to the host rather than to a plugin
// scope (plugins use Scope.Contribute). The caller must call remove.
func (p *Points) Add(point, key string, order int, value any, owner string) (remove func(), err error) {
	return p.add(point, key, order, value, owner)
}

func (p *Points) add(point, key string, order int, value any, owner string) (remove func(), err error) {
	refs, err := p.swap(nil, []pendingContribution{{point: point, key: key, order: order, value: value, owner: owner}})
	if err != nil {
		return nil, err
	}
	ref := refs[0]
	return func() { p.remove(ref) }, nil
}

// contribRef names one contribution that is in a point.
type contribRef struct {
	point string
	seq   uint64
}

// pendingContribution is a contribution not yet in its point: a staged
// scope's, until the reload that staged it commits.
type pendingContribution struct {
	point, key string
	order      int
	value      any
	owner      string
}

// conflictLocked returns the error a unique point gives for key, ignoring
// the contributions in skip and those owned by exceptOwner (when not empty).
func (p *Points) conflictLocked(point, key string, skip map[contribRef]bool, exceptOwner string) error {
	if !p.unique[point] || key == "" {
		return nil
	}
	for _, c := range p.items[point] {
		if c.Key == key && !skip[contribRef{point, c.seq}] && (exceptOwner == "" || c.Owner != exceptOwner) {
			return fmt.Errorf("point %q already has %q, contributed by %s", point, key, c.Owner)
		}
	}
	return nil
}

// check says whether c could be added by a reload of owner: a unique key
// held by owner itself is not a conflict, since the reload replaces it.
func (p *Points) check(c pendingContribution) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conflictLocked(c.point, c.key, nil, c.owner)
}

// swap removes drop and adds adds in one step: a reader sees either none or
// all of the change, and the watchers of each point it touches are told once,
// after it. Nothing changes when an add would break a unique point.
func (p *Points) swap(drop []contribRef, adds []pendingContribution) ([]contribRef, error) {
	p.mu.Lock()
	skip := make(map[contribRef]bool, len(drop))
	for _, r := range drop {
		skip[r] = true
	}
	for i, c := range adds {
		if err := p.conflictLocked(c.point, c.key, skip, ""); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		for _, d := range adds[:i] {
			if p.unique[c.point] && c.key != "" && d.point == c.point && d.key == c.key {
				p.mu.Unlock()
				return nil, fmt.Errorf("point %q already has %q, contributed by %s", c.point, c.key, d.owner)
			}
		}
	}
	touched := map[string]bool{}
	for _, r := range drop {
		if p.removeLocked(r) {
			touched[r.point] = true
		}
	}
	refs := make([]contribRef, len(adds))
	for i, c := range adds {
		p.seq++
		item := Contribution{Key: c.key, Order: c.order, Value: c.value, Owner: c.owner, seq: p.seq}
		list := append(slices.Clone(p.items[c.point]), item)
		slices.SortStableFunc(list, func(a, b Contribution) int {
			return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.seq, b.seq))
		})
		p.items[c.point] = list
		refs[i] = contribRef{c.point, p.seq}
		touched[c.point] = true
	}
	var watchers []func()
	for point := range touched {
		watchers = append(watchers, p.watchersLocked(point)...)
	}
	p.mu.Unlock()
	notify(watchers)
	return refs, nil
}

// remove takes one contribution out of its point; removing one that is gone
// already changes nothing and tells no one.
func (p *Points) remove(r contribRef) {
	p.mu.Lock()
	changed := p.removeLocked(r)
	var watchers []func()
	if changed {
		watchers = p.watchersLocked(r.point)
	}
	p.mu.Unlock()
	notify(watchers)
}

func (p *Points) removeLocked(r contribRef) bool {
	list := p.items[r.point]
	i := slices.IndexFunc(list, func(c Contribution) bool { return c.seq == r.seq })
	if i < 0 {
		return false
	}
	list = slices.Delete(slices.Clone(list), i, i+1)
	if len(list) == 0 {
		delete(p.items, r.point)
	} else {
		p.items[r.point] = list
	}
	return true
}

func (p *Points) watchersLocked(point string) []func() {
	ws := make([]func(), 0, len(p.watchers[point]))
	for _, w := range p.watchers[point] {
		ws = append(ws, w)
	}
	return ws
}

func notify(ws []func()) {
	for _, w := range ws {
		w()
	}
}

// All returns the point's contributions by Order, then oldest first.
func (p *Points) All(point string) []Contribution {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.items[point])
}

// AllOf returns the contributions of several points read in one step, so
// that a reader sees a reload's swap entirely or not at all.
func (p *Points) AllOf(points ...string) map[string][]Contribution {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]Contribution, len(points))
	for _, point := range points {
		out[point] = slices.Clone(p.items[point])
	}
	return out
}

// Get returns the newest contribution with key.
func (p *Points) Get(point, key string) (Contribution, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best Contribution
	found := false
	for _, c := range p.items[point] {
		if c.Key == key && (!found || c.seq > best.seq) {
			best, found = c, true
		}
	}
	return best, found
}

// Last returns the newest contribution to the point.
func (p *Points) Last(point string) (Contribution, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best Contribution
	found := false
	for _, c := range p.items[point] {
		if !found || c.seq > best.seq {
			best, found = c, true
		}
	}
	return best, found
}

// Exists says whether the point has contributions.
func (p *Points) Exists(point string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.items[point]) > 0
}

// Watch calls fn after every change to the point, outside any lock, until
// the returned cancel is called. Watchers of one point may run concurrently
// when changes do; fn should read the point afresh.
func (p *Points) Watch(point string, fn func()) (cancel func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	id := p.seq
	if p.watchers[point] == nil {
		p.watchers[point] = map[uint64]func(){}
	}
	p.watchers[point][id] = fn
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.watchers[point], id)
	}
}
