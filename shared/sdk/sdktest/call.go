package sdktest

import (
	"context"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// Call makes a call of tool with arguments (JSON, "" is {}) through every
// stage of the plugin, as the host's pipeline would with this plugin alone
// in it: its stage-1 listeners (an Ask goes to its approver, and is denied
// when it has none), its guards, its stage-3 listeners around the tool,
// its stage-4 listeners and its observers. A listener that fails denies or
// blocks the call as the host would; the error is then in the result's
// message. The returned error is only an observer's failure, which the
// host logs and the caller never sees.
func (p *Plugin) Call(ctx context.Context, tool, args string) (wire.ToolResult, error) {
	e := p.Execution(tool, args)
	res := p.call(ctx, e)
	res.ID = e.ID
	return res, p.Observe(ctx, e, res)
}

func (p *Plugin) call(ctx context.Context, e wire.Execution) wire.ToolResult {
	fail := func(code wire.Code, msg string) wire.ToolResult {
		return wire.ToolResult{Error: &wire.ToolError{Code: code, Message: msg}, DecidedBy: p.Describe.GetName()}
	}
	if _, ok := p.tool(e.Name); !ok {
		return wire.ToolResult{Error: &wire.ToolError{Code: wire.CodeUnknownTool, Message: "unknown tool " + e.Name}}
	}
	d, err := p.PreExecute(ctx, e)
	switch {
	case err != nil:
		return fail(wire.CodeDenied, err.Error())
	case d.Verdict == wire.VerdictDeny:
		return fail(wire.CodeDenied, d.Reason)
	case d.Verdict == wire.VerdictAsk:
		a, err := p.Approve(ctx, e, d.Reason)
		if err != nil {
			return fail(wire.CodeDenied, d.Reason+": "+err.Error())
		}
		if !a.Approved {
			return fail(wire.CodeDenied, a.Reason)
		}
	}
	reason, err := p.Guard(ctx, e)
	switch {
	case err != nil:
		return fail(wire.CodeDenied, err.Error())
	case reason != "":
		return fail(wire.CodeDenied, reason)
	}
	o, err := p.Execute(ctx, e)
	if err != nil {
		o = wire.Outcome{Error: &wire.ToolError{Code: wire.CodeToolError, Message: err.Error()}}
	}
	r, err := p.PostExecute(ctx, e, o)
	switch {
	case err != nil:
		return fail(wire.CodeBlocked, err.Error())
	case r.Verdict == wire.ReviewBlock:
		return fail(wire.CodeBlocked, r.Feedback)
	case r.Verdict == wire.ReviewReplace:
		o.Value = r.Value
	}
	return wire.ToolResult{OK: o.OK, Value: o.Value, Error: o.Error}
}
