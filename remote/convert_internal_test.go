package remote

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// A descriptor crosses through the wire's converters: a timeout travels in
// whole milliseconds rounded up, so a short one never becomes "none".
func TestDescriptorTimeoutRoundsUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		timeout time.Duration
		ms      int64
	}{{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {500 * time.Microsecond, 1}, {time.Millisecond, 1},
		{1500 * time.Microsecond, 2}, {3 * time.Second, 3000}} {
		d := toDescriptor(&pipeline.ToolInfo{ToolDescriptor: wire.ToolDescriptor{Name: "t", Description: "d", Timeout: c.timeout}})
		if got := d.GetTimeoutMs(); got != c.ms {
			t.Errorf("timeout %v travels as %dms, want %dms", c.timeout, got, c.ms)
		}
	}
}

func TestDescriptorRoundTrip(t *testing.T) {
	t.Parallel()
	if toDescriptor(nil) != nil {
		t.Error("no tool became a descriptor")
	}
	info := &pipeline.ToolInfo{
		ToolDescriptor: wire.ToolDescriptor{
			Name: "search", Description: "Searches.", Parameters: json.RawMessage(`{"type":"object"}`),
			Destructive: true, ReadOnly: true, Idempotent: true, Timeout: 2 * time.Second, Owner: "index",
			Notes: []string{"from a server"}, Held: "changed", Definition: "abc",
		},
	}
	d := toDescriptor(info)
	if d.GetOwner() != "index" {
		t.Errorf("owner %q, want index", d.GetOwner())
	}
	// The owner travels back too; registration sets its own (Tool.Info).
	got := fromDescriptor(d)
	want := pipeline.Tool{ToolDescriptor: info.ToolDescriptor}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip = %+v, want %+v", got, want)
	}
}

// toDescriptor converts through the wire's converters,
// the one place that knows the message: a timeout is rounded up to whole
// milliseconds there, so that 500µs does not become 0 ("none"). The
// pipeline's descriptor is the wire's, so nothing is copied field by field.
func toDescriptor(t *pipeline.ToolInfo) *pb.ToolDescriptor {
	if t == nil {
		return nil
	}
	return wire.ToolDescriptorToProto(t.ToolDescriptor)
}

// The pipeline's Error has the wire's ToolError's fields (its Code is the
// wire's), so the two convert as they are.
func toError(e *pipeline.Error) *pb.ToolError {
	return wire.ToolErrorToProto((*wire.ToolError)(e))
}

func fromError(e *pb.ToolError) *pipeline.Error {
	return (*pipeline.Error)(wire.ToolErrorFromProto(e))
}
