// Command oldplugin is a plugin built against the SDK of protocol version
// 1: a tool, a guard, a stage-1 wrapper, a stage-3 wrapper, a stage-4
// filter and an observer, each of which today's host must still drive.
package main

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

func main() {
	var results atomic.Int64
	sdk.Serve(sdk.Plugin[struct{}]{
		Name:    "oldplugin",
		Version: "1.0.0",
		Inject:  []string{"tools"},
		Apply: func(ctx context.Context, p *sdk.Context, _ struct{}) error {
			text := func(call *sdk.Call) string {
				var in struct{ Text string }
				_ = call.Bind(&in)
				return in.Text
			}
			if _, err := p.RegisterTool(ctx, sdk.Tool{
				Name: "old_echo", Description: "Answers its text.",
				Parameters: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
				Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
					return text(call), nil
				},
			}); err != nil {
				return err
			}
			if _, err := p.RegisterTool(ctx, sdk.Tool{
				Name: "old_results", Description: "How many results the observer saw.",
				Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
					return results.Load(), nil
				},
			}); err != nil {
				return err
			}
			if _, err := p.AddGuard(ctx, sdk.Guard{Name: "old-guard", Tools: []string{"old_echo"}, Check: func(ctx context.Context, call *sdk.Call) (string, error) {
				if strings.Contains(text(call), "forbidden") {
					return "the old guard refuses it", nil
				}
				return "", nil
			}}); err != nil {
				return err
			}
			if _, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{Name: "old-pre", Tools: []string{"old_echo"}, Wrap: func(ctx context.Context, call *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
				if text(call) == "deny me" {
					return sdk.Deny("the old listener denies it"), nil
				}
				return next(ctx)
			}}); err != nil {
				return err
			}
			if _, err := p.OnExecute(ctx, sdk.ExecuteListener{Name: "old-exec", Tools: []string{"old_echo"}, Wrap: func(ctx context.Context, call *sdk.Call, next sdk.NextOutcome) (sdk.Outcome, error) {
				return next(ctx)
			}}); err != nil {
				return err
			}
			if _, err := p.OnPostExecute(ctx, sdk.PostExecuteListener{Name: "old-post", Tools: []string{"old_echo"}, Filter: func(ctx context.Context, call *sdk.Call, out sdk.Outcome) (sdk.Review, error) {
				if strings.Contains(string(out.Value), "rude") {
					return sdk.Replace("[redacted]"), nil
				}
				return sdk.PassReview(), nil
			}}); err != nil {
				return err
			}
			_, err := p.OnResult(ctx, sdk.ResultListener{Name: "old-observer", Tools: []string{"old_echo"}, Observe: func(ctx context.Context, call *sdk.Call, r sdk.ToolResult) {
				results.Add(1)
			}})
			return err
		},
	})
}
