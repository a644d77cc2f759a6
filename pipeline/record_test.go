package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plugkit-go/plugkit/pipeline"
)

// TestRecordReachesObservers: a record (an egress connection) reaches
// every stage-5 observer, numbered with the calls, and none limited to
// named tools.
func TestRecordReachesObservers(t *testing.T) {
	_, tools := newTools(t, pipeline.Options{})
	type seen struct {
		id, name, caller, args string
		r                      pipeline.Result
	}
	var all, limited []seen
	defer tools.Observe("audit", func(_ context.Context, e *pipeline.Execution, r pipeline.Result) error {
		all = append(all, seen{e.ID(), e.Name(), e.Caller(), e.ArgumentsJSON(), r})
		return nil
	})()
	defer tools.Observe("one-tool", func(_ context.Context, e *pipeline.Execution, r pipeline.Result) error {
		limited = append(limited, seen{e.ID(), e.Name(), e.Caller(), e.ArgumentsJSON(), r})
		return nil
	}, "fetch")()
	r := pipeline.Fail(pipeline.CodeDenied, "egress refused: not listed")
	r.DecidedBy = "egress"
	id := tools.Record(context.Background(), "egress:evil.example:443", "fetcher", json.RawMessage(`{"host":"evil.example"}`), r)
	call := tools.Execute(context.Background(), "nope", json.RawMessage(`{}`), "cli")
	if len(all) != 2 || len(limited) != 0 {
		t.Fatalf("observers saw %d and %d, want 2 and 0", len(all), len(limited))
	}
	got := all[0]
	if got.id != id || got.r.ID != id || got.name != "egress:evil.example:443" || got.caller != "fetcher" ||
		got.args != `{"host":"evil.example"}` || got.r.OK || got.r.Error.Code != pipeline.CodeDenied || got.r.DecidedBy != "egress" {
		t.Errorf("record seen as %+v (id %s)", got, id)
	}
	if all[1].id == id || call.ID == id {
		t.Errorf("the call after the record has its id %s", id)
	}
}
