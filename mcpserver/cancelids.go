package mcpserver

import (
	"bytes"
	"encoding/json"
	"sync"
)

// A client cancels a request with notifications/cancelled naming the
// request's id as it wrote it. When exactIDs replaced that id, the SDK
// knows the request by the placeholder only, so the cancellation named
// nothing in flight and the call (and the bridged server's call under it)
// ran on. The requestId of a cancellation is therefore replaced too, by
// the placeholder of the request in flight with that id in the same
// session.

// inFlightIDs maps the ids exactIDs replaced, of requests still being
// served, to their placeholders, by session.
type inFlightIDs struct {
	mu sync.Mutex
	m  map[string][]byte // session NUL literal → placeholder
}

func idKey(session string, literal []byte) string { return session + "\x00" + string(literal) }

func (f *inFlightIDs) add(session string, swaps []idSwap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string][]byte{}
	}
	for _, s := range swaps {
		f.m[idKey(session, s.literal)] = s.placeholder
	}
}

func (f *inFlightIDs) remove(session string, swaps []idSwap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range swaps {
		k := idKey(session, s.literal)
		if bytes.Equal(f.m[k], s.placeholder) {
			delete(f.m, k)
		}
	}
}

func (f *inFlightIDs) lookup(session string) func(literal []byte) []byte {
	return func(literal []byte) []byte {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.m[idKey(session, literal)]
	}
}

// cancelIDs replaces the requestId of each notifications/cancelled in body
// (an object, or an array of them) that lookup knows by its placeholder.
// body is returned as it is when there is nothing to replace, or when it
// cannot be read (the SDK answers that).
func cancelIDs(body []byte, lookup func(literal []byte) []byte) []byte {
	if !bytes.Contains(body, []byte("notifications/cancelled")) {
		return body
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		changed := false
		for i, m := range batch {
			if out, ok := cancelID(m, lookup); ok {
				batch[i], changed = out, true
			}
		}
		if !changed {
			return body
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return body
		}
		return out
	}
	if out, ok := cancelID(trimmed, lookup); ok {
		return out
	}
	return body
}

// cancelID replaces one message's requestId, reporting whether it did.
func cancelID(msg []byte, lookup func(literal []byte) []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return nil, false
	}
	var method string
	if json.Unmarshal(m["method"], &method) != nil || method != "notifications/cancelled" {
		return nil, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		return nil, false
	}
	ph := lookup(bytes.TrimSpace(params["requestId"]))
	if ph == nil {
		return nil, false
	}
	params["requestId"] = ph
	p, err := json.Marshal(params)
	if err != nil {
		return nil, false
	}
	m["params"] = p
	out, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	return out, true
}
