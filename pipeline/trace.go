package pipeline

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Stage numbers a stage of the pipeline, 0 to 5 as in the package doc.
type Stage int

// The stages.
const (
	StageLookup Stage = iota
	StagePreExecute
	StageGuards
	StageExecute
	StagePostExecute
	StageResult
	NumStages
)

var stageNames = [NumStages]string{"lookup", "pre-execute", "guards", "execute", "post-execute", "result"}

// spanNames are the stage spans' names, made once.
var spanNames = [NumStages]string{
	"stage 0 lookup", "stage 1 pre-execute", "stage 2 guards",
	"stage 3 execute", "stage 4 post-execute", "stage 5 result",
}

// String is the stage's name: lookup, pre-execute, guards, execute,
// post-execute or result.
func (s Stage) String() string {
	if s < 0 || s >= NumStages {
		return "unknown"
	}
	return stageNames[s]
}

// StageTimes is how long each stage of one call took. A stage the call did
// not reach (a denial at stage 1 skips stages 2 to 4) is negative.
type StageTimes [NumStages]time.Duration

// Span attributes of a call. Never the arguments: they may hold anything.
const (
	AttrTool      = attribute.Key("plugkit.tool")
	AttrCaller    = attribute.Key("plugkit.caller")
	AttrCallID    = attribute.Key("plugkit.call_id")
	AttrCode      = attribute.Key("plugkit.code")
	AttrDecidedBy = attribute.Key("plugkit.decided_by")
)

// CallSpanName is the name of a call's span; the tool is an attribute, so
// that the names stay few whatever callers ask for.
const CallSpanName = "plugkit call"

// clock follows one call through its stages for Options.OnCall (how long
// each stage took) and Options.Tracer (a span per call and per stage). With
// neither set, or for a call neither times nor traces, it costs a check per
// stage.
type clock struct {
	onCall bool // OnCall is told of the call at its end
	timed  bool // the stages are timed for OnCall
	tracer trace.Tracer

	stage Stage // the stage running, -1 before the first
	mark  time.Time
	times StageTimes

	base context.Context // the call's context, with its span when traced
	call trace.Span
	span trace.Span // the running stage's
}

// begin starts following a call at start and returns its context; sampled
// says whether its stages are timed for OnCall.
func (c *clock) begin(ctx context.Context, o *Options, start time.Time, e *Execution, sampled bool) context.Context {
	c.onCall, c.tracer = o.OnCall != nil, o.Tracer
	c.timed = c.onCall && sampled
	if c.onCall {
		for i := range c.times {
			c.times[i] = -1
		}
	}
	if !c.timed && c.tracer == nil {
		return ctx
	}
	c.stage, c.mark = -1, start
	if c.tracer != nil {
		// The attributes are set once the span records: a call the sampler
		// leaves out (the sampler decides on the name alone) does not
		// build them. The span starts now, not at start, for the same
		// reason (an option is an allocation); the two are a few hundred
		// nanoseconds apart.
		ctx, c.call = c.tracer.Start(ctx, CallSpanName)
		if !c.call.IsRecording() {
			// Sampled out: no stage spans either.
			c.tracer = nil
		} else {
			c.call.SetAttributes(AttrTool.String(e.name), AttrCaller.String(e.caller), AttrCallID.String(e.id))
		}
	}
	c.base = ctx
	return ctx
}

// enter ends the running stage and starts stage s at now (now when zero);
// the returned context is the stage's, for what runs inside it (a remote
// listener's RPC becomes its child).
func (c *clock) enter(ctx context.Context, s Stage, now time.Time) context.Context {
	if !c.timed && c.tracer == nil {
		return ctx
	}
	now = c.leave(now)
	c.stage, c.mark = s, now
	if c.tracer == nil {
		return ctx
	}
	ctx, c.span = c.tracer.Start(c.base, spanNames[s], trace.WithTimestamp(now))
	return ctx
}

// leave ends the running stage at now (now when zero) and returns the time
// it ended.
func (c *clock) leave(now time.Time) time.Time {
	if now.IsZero() {
		now = time.Now()
	}
	if c.stage >= 0 {
		c.times[c.stage] = now.Sub(c.mark)
		if c.span != nil {
			c.span.End(trace.WithTimestamp(now))
			c.span = nil
		}
	}
	c.stage = -1
	return now
}

// end closes the call: the span gets the outcome, OnCall the stage times.
func (c *clock) end(o *Options, e *Execution, r *Result) {
	if c.timed || c.tracer != nil {
		now := c.leave(time.Time{})
		if c.tracer != nil {
			code := "ok"
			if !r.OK {
				code = string(r.Code())
				// The code, not the message: a reason may quote an argument.
				c.call.SetStatus(codes.Error, code)
			}
			c.call.SetAttributes(AttrCode.String(code), AttrDecidedBy.String(r.DecidedBy))
			c.call.End(trace.WithTimestamp(now))
		}
	}
	if c.onCall {
		o.OnCall(e, *r, c.times)
	}
}
