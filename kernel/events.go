package kernel

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// A Handler listens to an event. In a waterfall it wraps the rest of the
// chain: calling next runs the listeners after it and the default, and not
// calling it vetoes them. In an emit, next is nil and the result is ignored.
type Handler func(ctx context.Context, payload any, next Next) (any, error)

// Next runs the inner part of a waterfall. It is re-entrant: each call runs
// the inner listeners again, from the one after the caller.
type Next func(ctx context.Context) (any, error)

// Events dispatches named events to listeners in registration order. Each
// event's listeners are an immutable snapshot, so a dispatch in flight keeps
// the listeners it started with.
type Events struct {
	log    hclog.Logger
	mu     sync.Mutex
	seq    uint64
	byName map[string]*atomic.Pointer[[]listener]
}

type listener struct {
	id    uint64
	owner string
	h     Handler
}

func newEvents(log hclog.Logger) *Events {
	return &Events{log: log, byName: map[string]*atomic.Pointer[[]listener]{}}
}

func (ev *Events) slot(name string) *atomic.Pointer[[]listener] {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	p, ok := ev.byName[name]
	if !ok {
		p = new(atomic.Pointer[[]listener])
		ev.byName[name] = p
	}
	return p
}

// add registers h and returns its removal; Scope.On makes it an effect.
func (ev *Events) add(name, owner string, h Handler) (remove func()) {
	p := ev.slot(name)
	ev.mu.Lock()
	ev.seq++
	id := ev.seq
	var cur []listener
	if old := p.Load(); old != nil {
		cur = *old
	}
	next := append(slices.Clone(cur), listener{id: id, owner: owner, h: h})
	p.Store(&next)
	ev.mu.Unlock()
	return func() {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		cur := *p.Load()
		next := slices.DeleteFunc(slices.Clone(cur), func(l listener) bool { return l.id == id })
		p.Store(&next)
	}
}

func (ev *Events) snapshot(name string) []listener {
	ev.mu.Lock()
	p, ok := ev.byName[name]
	ev.mu.Unlock()
	if !ok {
		return nil
	}
	if l := p.Load(); l != nil {
		return *l
	}
	return nil
}

// Count is the number of listeners of an event.
func (ev *Events) Count(name string) int { return len(ev.snapshot(name)) }

// Emit calls every listener of the event. Each is contained: an error or a
// panic is logged with the listener's owner and the others still run.
func (ev *Events) Emit(ctx context.Context, name string, payload any) {
	for _, l := range ev.snapshot(name) {
		if _, err := call(ctx, l, payload, nil); err != nil {
			ev.log.Error("event listener failed", "event", name, "plugin", l.owner, "error", err)
		}
	}
}

// Waterfall runs the event's listeners as middleware, the first registered
// outermost, ending in last (which may be nil: the chain then ends with a
// nil result). A listener's error or panic is returned to its caller's next,
// and from the outermost listener to the caller of Waterfall.
func (ev *Events) Waterfall(ctx context.Context, name string, payload any, last Next) (any, error) {
	ls := ev.snapshot(name)
	var run func(ctx context.Context, i int) (any, error)
	run = func(ctx context.Context, i int) (any, error) {
		if i == len(ls) {
			if last == nil {
				return nil, nil
			}
			return last(ctx)
		}
		return call(ctx, ls[i], payload, func(ctx context.Context) (any, error) { return run(ctx, i+1) })
	}
	return run(ctx, 0)
}

func call(ctx context.Context, l listener, payload any, next Next) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("listener of %s panicked: %v", l.owner, r)
		}
	}()
	return l.h(ctx, payload, next)
}
