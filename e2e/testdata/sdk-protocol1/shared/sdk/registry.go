package sdk

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// registry maps the handler ids this process chose to its handlers, one
// table per kind so a lookup can never return a handler of the wrong type.
//
// The plugin, not the host, picks handler ids: the handler is stored before
// the registration RPC is sent, so a call the host routes to it before the
// reply arrives already finds it.
type registry struct {
	next atomic.Uint64

	tools     table[Tool]
	guards    table[Guard]
	pre       table[PreExecuteListener]
	execute   table[ExecuteListener]
	post      table[PostExecuteListener]
	results   table[ResultListener]
	approvers table[Approver]
	services  table[Service]
}

// newID returns a process-unique handler id; the kind prefix is only for
// people reading logs.
func (r *registry) newID(kind string) string {
	return kind + "-" + strconv.FormatUint(r.next.Add(1), 10)
}

// reset forgets every handler: the host undid every registration before it
// applies the plugin again.
func (r *registry) reset() {
	r.tools.reset()
	r.guards.reset()
	r.pre.reset()
	r.execute.reset()
	r.post.reset()
	r.results.reset()
	r.approvers.reset()
	r.services.reset()
}

type table[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

func (t *table[T]) put(id string, v T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]T{}
	}
	t.m[id] = v
}

func (t *table[T]) get(id string) (T, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.m[id]
	return v, ok
}

func (t *table[T]) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

func (t *table[T]) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = nil
}
