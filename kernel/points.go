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
	p.mu.Lock()
	if p.unique[point] && key != "" {
		for _, c := range p.items[point] {
			if c.Key == key {
				p.mu.Unlock()
				return nil, fmt.Errorf("point %q already has %q, contributed by %s", point, key, c.Owner)
			}
		}
	}
	p.seq++
	c := Contribution{Key: key, Order: order, Value: value, Owner: owner, seq: p.seq}
	list := append(slices.Clone(p.items[point]), c)
	slices.SortStableFunc(list, func(a, b Contribution) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.seq, b.seq))
	})
	p.items[point] = list
	watchers := p.watchersLocked(point)
	p.mu.Unlock()
	notify(watchers)

	seq := c.seq
	return func() {
		p.mu.Lock()
		list := slices.DeleteFunc(slices.Clone(p.items[point]), func(c Contribution) bool { return c.seq == seq })
		if len(list) == 0 {
			delete(p.items, point)
		} else {
			p.items[point] = list
		}
		watchers := p.watchersLocked(point)
		p.mu.Unlock()
		notify(watchers)
	}, nil
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
