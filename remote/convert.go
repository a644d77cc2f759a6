package remote

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The host-side converters between the pipeline's values and the wire's.
// Values cross as JSON: a json.RawMessage goes as it is, anything else is
// marshalled.

// fromDescriptor is a plugin's registration, converted by the wire's
// converters, the one place that knows the message; its Owner and
// OwnerPrefix are the host's to set (pipeline.Tool.Info ignores them).
func fromDescriptor(d *pb.ToolDescriptor) pipeline.Tool {
	return pipeline.Tool{ToolDescriptor: wire.ToolDescriptorFromProto(d)}
}

// toExecution converts e with its tool's whole descriptor.
func toExecution(e *pipeline.Execution) *pb.Execution {
	w := wireExecution(e)
	if t := e.Tool(); t != nil {
		w.Tool = t.ToolDescriptor
	}
	return wire.ExecutionToProto(w)
}

// toExecutionByRef converts e without its tool's descriptor.
func toExecutionByRef(e *pipeline.Execution) *pb.Execution {
	return wire.ExecutionToProto(wireExecution(e))
}

// wireExecution is e as the contract has it, without its tool's
// descriptor (the pipeline keeps the call behind accessors, so that no
// stage can change it).
func wireExecution(e *pipeline.Execution) wire.Execution {
	return wire.Execution{
		ID: e.ID(), Name: e.Name(), Arguments: json.RawMessage(e.ArgumentsJSON()),
		Caller:     e.Caller(),
		Principal:  e.Principal(),
		DryRun:     e.DryRun(),
		Visibility: e.Visibility(),
		// Read when the result is sent: the Ask is over by then.
		Approval: json.RawMessage(e.Approval()),
		// Read when the result is sent: the call, and its questions, are over.
		Elicitations: json.RawMessage(e.Elicitations()),
	}
}

// toolRefs is what a plugin process that keeps descriptors by ref has been
// sent: seen holds the refs it has surely stored (it answered a request
// that carried the descriptor); queued those carried by a result already
// queued for its observers, whose queue is delivered in order, so that a
// later result on it may carry the ref alone.
type toolRefs struct {
	seen, queued sync.Map // tool ref → struct{}
}

// execution converts e for a request to the plugin. When the plugin keeps
// descriptors by ref and has stored this one, it carries the ref alone;
// otherwise the descriptor too, and seen, called once the plugin answered,
// records that it has it.
func (in *instance) execution(e *pipeline.Execution) (x *pb.Execution, seen func()) {
	ref := refOf(in, e)
	if ref == 0 {
		return toExecution(e), func() {}
	}
	if _, ok := in.refs.seen.Load(ref); ok {
		x = toExecutionByRef(e)
		x.ToolRef = ref
		return x, func() {}
	}
	x = toExecution(e)
	x.ToolRef = ref
	return x, func() { in.refs.seen.Store(ref, struct{}{}) }
}

// observedExecution converts e for a result queued for the plugin's
// observers, which are delivered in order: once one result carried the
// descriptor, the later ones carry its ref alone.
func (in *instance) observedExecution(e *pipeline.Execution) *pb.Execution {
	ref := refOf(in, e)
	if ref == 0 {
		return toExecution(e)
	}
	_, seen := in.refs.seen.Load(ref)
	_, queued := in.refs.queued.LoadOrStore(ref, struct{}{})
	var x *pb.Execution
	if seen || queued {
		x = toExecutionByRef(e)
	} else {
		x = toExecution(e)
	}
	x.ToolRef = ref
	return x
}

// refOf is the ref e's tool goes by for in's plugin, 0 when it goes whole.
func refOf(in *instance, e *pipeline.Execution) uint64 {
	if in.refs == nil || e.Tool() == nil {
		return 0
	}
	return e.Tool().Revision()
}

// valueJSON encodes a result value for the wire.
func valueJSON(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("result value is not JSON: %w", err)
		}
		return b, nil
	}
}

// fromValueJSON is the other way; an absent value is nil.
func fromValueJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// ToResult converts a pipeline result for the wire (an unencodable value
// becomes a TOOL_ERROR rather than a lost result).
func ToResult(r pipeline.Result) *pb.ToolResult {
	v, err := valueJSON(r.Value)
	if err != nil {
		r.OK, r.Error, r.DecidedBy = false, &pipeline.Error{Code: pipeline.CodeToolError, Message: err.Error()}, ""
		v = nil
	}
	return wire.ToolResultToProto(wire.ToolResult{
		ID: r.ID, OK: r.OK, Value: v, Error: (*wire.ToolError)(r.Error),
		DecidedBy: r.DecidedBy, Duration: r.Duration, Shadow: r.Shadow,
	})
}

func toOutcome(r pipeline.Result) *pb.Outcome {
	v, err := valueJSON(r.Value)
	if err != nil {
		return wire.OutcomeToProto(wire.Outcome{Error: &wire.ToolError{Code: wire.CodeToolError, Message: err.Error()}})
	}
	return wire.OutcomeToProto(wire.Outcome{OK: r.OK, Value: v, Error: (*wire.ToolError)(r.Error)})
}

func fromOutcome(m *pb.Outcome) pipeline.Result {
	o := wire.OutcomeFromProto(m)
	return pipeline.Result{OK: o.OK, Value: fromValueJSON(o.Value), Error: (*pipeline.Error)(o.Error)}
}

// toDecision is the host's answer to a wrapping listener's next: the
// pipeline's verdicts are the wire's (and next's answer is always one of
// allow, deny and ask: the pipeline turns any other into a deny).
func toDecision(d pipeline.Decision) *pb.Decision {
	return wire.DecisionToProto(wire.Decision{Verdict: d.Verdict, Reason: d.Reason, Rule: d.Rule, Route: d.Route})
}

// toReview is the host's answer to a wrapping listener's next (accept,
// replace or block: the pipeline blocks on any other); a replacement that
// is not JSON blocks.
func toReview(r pipeline.Review) *pb.Review {
	w := wire.Review{Verdict: r.Action, Feedback: r.Feedback}
	if r.Action == pipeline.ReviewReplace {
		v, err := valueJSON(r.Value)
		if err != nil {
			return wire.ReviewToProto(wire.Review{Verdict: wire.ReviewBlock, Feedback: err.Error()})
		}
		w.Value = v
	}
	return wire.ReviewToProto(w)
}
