package pipeline

import (
	"context"
	"encoding/json"
)

// Record gives stage 5's observers (the audit among them) a record of
// something a plugin did that was not a call but must be audited like one:
// an outbound connection through its egress proxy. name says what it was
// ("egress:api.github.com:443"): it holds a colon, which MCP's tool
// name charset leaves out, and an observer limited to named tools never
// sees one. args is canonical
// JSON of the details; r is its outcome, with Duration set. It returns the
// record's id, numbered with the calls'.
func (t *Tools) Record(ctx context.Context, name, caller string, args json.RawMessage, r Result) string {
	s := t.acquire()
	defer s.inflight.Add(-1)
	id, _ := t.nextID()
	e := NewExecution(id, name, caller, nil, string(args))
	r.ID = id
	t.observe(ctx, s, e, r)
	return id
}
