package remote

import (
	"context"
	"sync"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// Receipts hands out where critical plugins' result listeners recorded each
// call (an audit log's seq and line hash), when the deployment asks for
// receipts.
//
// Stage 5 is observe only and does not hold up the caller, so a receipt
// cannot come back with the result from the pipeline. It comes back with the
// acknowledgement a critical plugin sends for each durable batch (durable.go)
// once every result in it is written: a front end that wants the receipt
// waits for it after the call (Wait), a few milliseconds (the batch pacing
// and the write), bounded by its context.
type Receipts struct {
	mu      sync.Mutex
	got     map[string]pipeline.Receipt // by call id, until taken or pushed out
	order   []string                    // got's ids, oldest first
	waiting map[string]chan pipeline.Receipt
	sources int // durable result slots that may send receipts
	// from is the plugin receipts are taken from; "" for the one that
	// declares receipts.
	from string
}

// receiptsKept bounds the receipts nobody waited for yet (a call made by a
// plugin, or one whose receipt came before its caller asked): the oldest
// are dropped past it.
const receiptsKept = 4096

func newReceipts(from string) *Receipts {
	return &Receipts{got: map[string]pipeline.Receipt{}, waiting: map[string]chan pipeline.Receipt{}, from: from}
}

// accepts reports whether receipts of plugin, which declares receipts or
// not, are handed back: only the named plugin's, or without a name, only
// a declaring one's.
func (r *Receipts) accepts(plugin string, declared bool) bool {
	if r == nil {
		return false
	}
	if r.from != "" {
		return plugin == r.from
	}
	return declared
}

// Receipts is nil unless Options.Receipts.
func (m *Manager) Receipts() *Receipts { return m.receipts }

// source counts a durable result slot in (+1) or out (-1).
func (r *Receipts) source(n int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.sources += n
	r.mu.Unlock()
}

// add takes the receipts of an acknowledged batch of plugin's; false when
// they are not accepted (and are dropped).
func (r *Receipts) add(plugin string, declared bool, rs []*pb.Receipt) bool {
	if r == nil || len(rs) == 0 {
		return true
	}
	if !r.accepts(plugin, declared) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range rs {
		rec := pipeline.Receipt{Plugin: plugin, Seq: x.GetSeq(), Hash: x.GetHash()}
		id := x.GetCallId()
		if ch, ok := r.waiting[id]; ok {
			delete(r.waiting, id)
			ch <- rec
			continue
		}
		if _, ok := r.got[id]; ok {
			continue // a receipt sent again: the first stands
		}
		r.got[id] = rec
		r.order = append(r.order, id)
		if len(r.order) > receiptsKept {
			delete(r.got, r.order[0])
			r.order = r.order[1:]
		}
	}
	return true
}

// Wait returns the receipt of call id once a plugin acknowledged writing
// it; false when ctx ends first, or at once when no critical plugin has a
// result listener that could send one.
func (r *Receipts) Wait(ctx context.Context, id string) (pipeline.Receipt, bool) {
	if r == nil || id == "" {
		return pipeline.Receipt{}, false
	}
	r.mu.Lock()
	if rec, ok := r.got[id]; ok {
		delete(r.got, id)
		r.mu.Unlock()
		return rec, true
	}
	if r.sources == 0 {
		r.mu.Unlock()
		return pipeline.Receipt{}, false
	}
	ch := make(chan pipeline.Receipt, 1)
	r.waiting[id] = ch
	r.mu.Unlock()
	select {
	case rec := <-ch:
		return rec, true
	case <-ctx.Done():
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.waiting[id] == ch {
			delete(r.waiting, id)
			return pipeline.Receipt{}, false
		}
		return <-ch, true // came while ctx ended
	}
}
