package kernel

import (
	"fmt"
	"sync"
	"sync/atomic"
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
//
// Adding or removing one contribution costs the same whatever the size of
// its point (a gateway's tool registry holds thousands): a point keeps its
// contributions in order with removed ones marked until enough accumulate
// to compact, and an index by key for unique points and Get.
type Points struct {
	mu       sync.Mutex
	seq      uint64
	items    map[string]*pointList
	bySeq    map[uint64]*item
	unique   map[string]bool
	reserved map[string]map[string]*reservation // point → key → who holds it
	watchers map[string]map[uint64]func()
	// gen counts changes to any point; version is each point's count.
	// A reader that built something from the points compares them to
	// know whether, and what, to rebuild.
	gen     atomic.Uint64
	version map[string]uint64
	// held counts the holds in force (hold); while there is one, a
	// removal's watchers are told at the last release, once a point.
	held    int
	touched map[string]bool
}

// ReservedError is the error of a contribution to a unique point under a key
// reserved for another owner.
type ReservedError struct {
	Point, Key string
	// Owner holds the reservation; Why says why it is not there itself.
	Owner, Why string
	// First is true the first time this contributor was refused under this
	// reservation, so that the refusal is logged once, not at every retry.
	First bool
}

func (e *ReservedError) Error() string {
	return fmt.Sprintf("%q is reserved for %s, which declared it (%s)", e.Key, e.Owner, e.Why)
}

func newPoints() *Points {
	return &Points{
		items:    map[string]*pointList{},
		bySeq:    map[uint64]*item{},
		unique:   map[string]bool{},
		reserved: map[string]map[string]*reservation{},
		watchers: map[string]map[uint64]func(){},
		version:  map[string]uint64{},
	}
}

// touchLocked records a change to point.
func (p *Points) touchLocked(point string) {
	p.version[point]++
	p.gen.Add(1)
}

// Generation changes whenever any point changes; reading it is one atomic
// load, so that a reader can check on every use whether what it built from
// the points is still current.
func (p *Points) Generation() uint64 { return p.gen.Load() }

// Changed reads, in one step, the generation and the contributions of those
// of points whose version is not the one in known; versions is every
// point's version now, to pass as known next time. A reader keeps what it
// built from the other points, and still sees a swap whole.
func (p *Points) Changed(known map[string]uint64, points ...string) (gen uint64, changed map[string][]Contribution, versions map[string]uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed = map[string][]Contribution{}
	versions = make(map[string]uint64, len(points))
	for _, point := range points {
		v := p.version[point]
		versions[point] = v
		if old, ok := known[point]; ok && old == v {
			continue
		}
		if l := p.items[point]; l != nil {
			changed[point] = l.values()
		} else {
			changed[point] = nil
		}
	}
	return p.gen.Load(), changed, versions
}

// DeclareUnique makes the point refuse a second contribution with a key it
// already holds.
func (p *Points) DeclareUnique(point string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unique[point] = true
}

// Reserve keeps key of a unique point for owner until release is called: a
// contribution under key by anyone else is refused with a *ReservedError,
// whether or not owner holds key now. The host reserves the names of a
// plugin's tools while the plugin is restarting or failed, so that no other
// plugin takes them meanwhile. Reservations of one key by one owner nest.
func (p *Points) Reserve(point, key, owner, why string) (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := p.reserved[point]
	if keys == nil {
		keys = map[string]*reservation{}
		p.reserved[point] = keys
	}
	r := keys[key]
	if r == nil || r.owner != owner {
		// A newer reservation by another owner replaces the older one:
		// the host only reserves what the owner holds, so two owners can
		// only follow each other (one unloaded, the other loaded).
		r = &reservation{owner: owner}
		keys[key] = r
	}
	r.why = why
	r.holds++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			r.holds--
			if r.holds == 0 && p.reserved[point][key] == r {
				delete(p.reserved[point], key)
				if len(p.reserved[point]) == 0 {
					delete(p.reserved, point)
				}
			}
		})
	}
}

// Add contributes a value that belongs to the host rather than to a plugin
// scope (plugins use Scope.Contribute). The caller must call remove.
func (p *Points) Add(point, key string, order int, value any, owner string) (remove func(), err error) {
	refs, _, err := p.swap(nil, []pendingContribution{{point: point, key: key, order: order, value: value, owner: owner}}, false)
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
// A key reserved for someone else than owner is refused too.
func (p *Points) conflictLocked(point, key, owner string, skip map[uint64]bool, exceptOwner string) error {
	if !p.unique[point] || key == "" {
		return nil
	}
	if r := p.reserved[point][key]; r != nil && r.owner != owner {
		first := false
		if !r.refused[owner] {
			if r.refused == nil {
				r.refused = map[string]bool{}
			}
			r.refused[owner], first = true, true
		}
		return &ReservedError{Point: point, Key: key, Owner: r.owner, Why: r.why, First: first}
	}
	l := p.items[point]
	if l == nil {
		return nil
	}
	for _, c := range l.byKey[key] {
		if !skip[c.seq] && (exceptOwner == "" || c.Owner != exceptOwner) {
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
	return p.conflictLocked(c.point, c.key, c.owner, nil, c.owner)
}

// swap removes drop and adds adds in one step: a reader sees either none or
// all of the change, and the watchers of each point it touches are told once,
// after it. When an add would break a unique point, nothing changes and err
// says why; with partial, that add alone is left out (its refs entry is
// zero and errs says why) and the rest of the change is made.
func (p *Points) swap(drop []contribRef, adds []pendingContribution, partial bool) (refs []contribRef, errs []error, err error) {
	p.mu.Lock()
	var skip map[uint64]bool
	if len(drop) > 0 {
		skip = make(map[uint64]bool, len(drop))
		for _, r := range drop {
			skip[r.seq] = true
		}
	}
	type pk struct{ point, key string }
	var inBatch map[pk]string // unique keys this batch adds, and by whom
	refused := 0
	for i, c := range adds {
		err := p.conflictLocked(c.point, c.key, c.owner, skip, "")
		if err == nil && p.unique[c.point] && c.key != "" {
			if inBatch == nil {
				inBatch = map[pk]string{}
			}
			if by, dup := inBatch[pk{c.point, c.key}]; dup {
				err = fmt.Errorf("point %q already has %q, contributed by %s", c.point, c.key, by)
			} else {
				inBatch[pk{c.point, c.key}] = c.owner
			}
		}
		if err != nil {
			if !partial {
				p.mu.Unlock()
				return nil, nil, err
			}
			if errs == nil {
				errs = make([]error, len(adds))
			}
			errs[i] = err
			refused++
		}
	}
	touched := map[string]bool{}
	for _, r := range drop {
		if p.removeLocked(r) {
			touched[r.point] = true
		}
	}
	refs = make([]contribRef, len(adds))
	for i, c := range adds {
		if errs != nil && errs[i] != nil {
			continue
		}
		p.seq++
		it := &item{Contribution: Contribution{Key: c.key, Order: c.order, Value: c.value, Owner: c.owner, seq: p.seq}, point: c.point}
		l := p.items[c.point]
		if l == nil {
			l = &pointList{}
			p.items[c.point] = l
		}
		l.insert(it)
		p.bySeq[p.seq] = it
		refs[i] = contribRef{c.point, p.seq}
		touched[c.point] = true
	}
	var watchers []func()
	for point := range touched {
		p.touchLocked(point)
		watchers = append(watchers, p.watchersLocked(point)...)
	}
	p.mu.Unlock()
	notify(watchers)
	return refs, errs, nil
}

// remove takes one contribution out of its point; removing one that is gone
// already changes nothing and tells no one.
func (p *Points) remove(r contribRef) {
	p.mu.Lock()
	changed := p.removeLocked(r)
	var watchers []func()
	if changed {
		p.touchLocked(r.point)
		if p.held > 0 {
			p.touched[r.point] = true
		} else {
			watchers = p.watchersLocked(r.point)
		}
	}
	p.mu.Unlock()
	notify(watchers)
}

// hold defers telling the watchers of the points removals change until the
// matching release, which tells each watcher of a point changed meanwhile
// once: a scope undone with thousands of contributions (a bridged server's
// tools) wakes each watcher once, not once a contribution. Readers see
// each removal at once; only the notices wait.
func (p *Points) hold() {
	p.mu.Lock()
	if p.held == 0 {
		p.touched = map[string]bool{}
	}
	p.held++
	p.mu.Unlock()
}

// release ends a hold; the last one tells the watchers.
func (p *Points) release() {
	p.mu.Lock()
	p.held--
	var watchers []func()
	if p.held == 0 {
		for point := range p.touched {
			watchers = append(watchers, p.watchersLocked(point)...)
		}
		p.touched = nil
	}
	p.mu.Unlock()
	notify(watchers)
}

func (p *Points) removeLocked(r contribRef) bool {
	it := p.bySeq[r.seq]
	if it == nil || it.point != r.point {
		return false
	}
	delete(p.bySeq, r.seq)
	l := p.items[r.point]
	l.drop(it)
	if l.live() == 0 {
		delete(p.items, r.point)
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
	if l := p.items[point]; l != nil {
		return l.values()
	}
	return nil
}

// AllOf returns the contributions of several points read in one step, so
// that a reader sees a reload's swap entirely or not at all.
func (p *Points) AllOf(points ...string) map[string][]Contribution {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]Contribution, len(points))
	for _, point := range points {
		if l := p.items[point]; l != nil {
			out[point] = l.values()
		} else {
			out[point] = nil
		}
	}
	return out
}

// Get returns the newest contribution with key.
func (p *Points) Get(point, key string) (Contribution, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.items[point]
	if l == nil || key == "" {
		// An empty key is not indexed: look through the point.
		var best Contribution
		found := false
		if l != nil {
			l.each(func(it *item) {
				if it.Key == key && (!found || it.seq > best.seq) {
					best, found = it.Contribution, true
				}
			})
		}
		return best, found
	}
	var best *item
	for _, it := range l.byKey[key] {
		if best == nil || it.seq > best.seq {
			best = it
		}
	}
	if best == nil {
		return Contribution{}, false
	}
	return best.Contribution, true
}

// Last returns the newest contribution to the point.
func (p *Points) Last(point string) (Contribution, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best Contribution
	found := false
	if l := p.items[point]; l != nil {
		l.each(func(it *item) {
			if !found || it.seq > best.seq {
				best, found = it.Contribution, true
			}
		})
	}
	return best, found
}

// Exists says whether the point has contributions.
func (p *Points) Exists(point string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.items[point]
	return l != nil && l.live() > 0
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
