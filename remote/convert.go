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

// toDescriptor and fromDescriptor convert through the wire's converters,
// the one place that knows the message: a timeout is rounded up to whole
// milliseconds there, so that 500µs does not become 0 ("none"). The
// pipeline's descriptor is the wire's, so nothing is copied field by field.
func toDescriptor(t *pipeline.ToolInfo) *pb.ToolDescriptor {
	if t == nil {
		return nil
	}
	return wire.ToolDescriptorToProto(t.ToolDescriptor)
}

// fromDescriptor is a plugin's registration; its Owner and OwnerPrefix are
// the host's to set (pipeline.Tool.Info ignores them).
func fromDescriptor(d *pb.ToolDescriptor) pipeline.Tool {
	return pipeline.Tool{ToolDescriptor: wire.ToolDescriptorFromProto(d)}
}

// toExecution converts e with its tool's whole descriptor.
func toExecution(e *pipeline.Execution) *pb.Execution {
	x := toExecutionByRef(e)
	x.Tool = toDescriptor(e.Tool())
	return x
}

// toExecutionByRef converts e without its tool's descriptor.
func toExecutionByRef(e *pipeline.Execution) *pb.Execution {
	return &pb.Execution{
		Id: e.ID(), Name: e.Name(), ArgumentsJson: []byte(e.ArgumentsJSON()),
		Caller:     e.Caller(),
		Principal:  wire.PrincipalToProto(e.Principal()),
		DryRun:     e.DryRun(),
		Visibility: e.Visibility(),
		// Read when the result is sent: the Ask is over by then.
		ApprovalJson: []byte(e.Approval()),
		// Read when the result is sent: the call, and its questions, are over.
		ElicitationsJson: []byte(e.Elicitations()),
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

func toError(e *pipeline.Error) *pb.ToolError {
	if e == nil {
		return nil
	}
	return &pb.ToolError{Code: string(e.Code), Message: e.Message}
}

func fromError(e *pb.ToolError) *pipeline.Error {
	if e == nil {
		return nil
	}
	return &pipeline.Error{Code: pipeline.Code(e.GetCode()), Message: e.GetMessage()}
}

// ToResult converts a pipeline result for the wire (an unencodable value
// becomes a TOOL_ERROR rather than a lost result).
func ToResult(r pipeline.Result) *pb.ToolResult {
	v, err := valueJSON(r.Value)
	if err != nil {
		r.OK, r.Error, r.DecidedBy = false, &pipeline.Error{Code: pipeline.CodeToolError, Message: err.Error()}, ""
		v = nil
	}
	return &pb.ToolResult{Id: r.ID, Ok: r.OK, ValueJson: v, Error: toError(r.Error), DecidedBy: r.DecidedBy, DurationNs: int64(r.Duration), Shadow: toShadow(r.Shadow)}
}

// toShadow converts what listeners in shadow would have decided.
func toShadow(ds []pipeline.ShadowDecision) []*pb.ShadowDecision {
	if len(ds) == 0 {
		return nil
	}
	out := make([]*pb.ShadowDecision, len(ds))
	for i, d := range ds {
		out[i] = &pb.ShadowDecision{Stage: int32(d.Stage), Plugin: d.Plugin, Rule: d.Rule, Would: d.Would, Reason: d.Reason}
	}
	return out
}

func toOutcome(r pipeline.Result) *pb.Outcome {
	v, err := valueJSON(r.Value)
	if err != nil {
		return &pb.Outcome{Error: &pb.ToolError{Code: string(pipeline.CodeToolError), Message: err.Error()}}
	}
	return &pb.Outcome{Ok: r.OK, ValueJson: v, Error: toError(r.Error)}
}

func fromOutcome(o *pb.Outcome) pipeline.Result {
	return pipeline.Result{OK: o.GetOk(), Value: fromValueJSON(o.GetValueJson()), Error: fromError(o.GetError())}
}

func toDecision(d pipeline.Decision) *pb.Decision {
	v := pb.Verdict_VERDICT_UNSPECIFIED
	switch d.Verdict {
	case pipeline.VerdictAllow:
		v = pb.Verdict_VERDICT_ALLOW
	case pipeline.VerdictDeny:
		v = pb.Verdict_VERDICT_DENY
	case pipeline.VerdictAsk:
		v = pb.Verdict_VERDICT_ASK
	}
	return &pb.Decision{Verdict: v, Reason: d.Reason, Rule: d.Rule, Route: d.Route}
}

func toReview(r pipeline.Review) *pb.Review {
	out := &pb.Review{Feedback: r.Feedback}
	switch r.Action {
	case pipeline.ReviewAccept:
		out.Verdict = pb.ReviewVerdict_REVIEW_VERDICT_ACCEPT
	case pipeline.ReviewReplace:
		out.Verdict = pb.ReviewVerdict_REVIEW_VERDICT_REPLACE
		v, err := valueJSON(r.Value)
		if err != nil {
			return &pb.Review{Verdict: pb.ReviewVerdict_REVIEW_VERDICT_BLOCK, Feedback: err.Error()}
		}
		out.ValueJson = v
	case pipeline.ReviewBlock:
		out.Verdict = pb.ReviewVerdict_REVIEW_VERDICT_BLOCK
	}
	return out
}
