package sdk_test

import (
	"context"
	"fmt"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// A minimal tool plugin: this is the whole of its main. The configuration is
// decoded strictly into Config, and the schema the host checks the
// deployment's block against is derived from the same struct.
func Example() {
	type Config struct {
		Greeting string `json:"greeting,omitempty" doc:"how to greet"`
	}
	sdk.Serve(sdk.Plugin[Config]{
		Name:   "hello",
		Inject: []string{"tools"},
		Apply: func(ctx context.Context, p *sdk.Context, cfg Config) error {
			_, err := p.RegisterTool(ctx, sdk.Tool{
				Name:        "hello",
				Description: "Greets someone.",
				Parameters:  `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
				ReadOnly:    true,
				Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
					var args struct{ Name string }
					if err := call.Bind(&args); err != nil {
						return nil, err
					}
					return fmt.Sprintf("%s, %s!", cfg.Greeting, args.Name), nil
				},
			})
			return err
		},
	})
}

// A guard can only deny: return a reason, or "" to stay out of the way.
func ExampleContext_AddGuard() {
	apply := func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		_, err := p.AddGuard(ctx, sdk.Guard{
			Name:  "no-root",
			Tools: []string{"delete"}, // the host skips the RPC for other tools
			Check: func(ctx context.Context, call *sdk.Call) (string, error) {
				var args struct{ Path string }
				if err := call.Bind(&args); err != nil {
					return "", err // an error denies: guards fail closed
				}
				if args.Path == "/" {
					return "refusing to delete the root filesystem", nil
				}
				return "", nil
			},
		})
		return err
	}
	sdk.Serve(sdk.Plugin[struct{}]{Name: "safety", Inject: []string{"tools"}, Apply: apply})
}

// Stage-1 listeners come in two forms. A filter answers in one RPC; Pass
// lets the host continue the chain. A wrapper calls next (a second RPC, back
// to the host) and may override what the rest of the chain decided.
func ExampleContext_OnPreExecute() {
	apply := func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		if _, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{
			Filter: func(ctx context.Context, call *sdk.Call) (sdk.Decision, error) {
				if call.Tool.Destructive {
					return sdk.Ask("run " + call.Name + "?"), nil
				}
				return sdk.Pass(), nil
			},
		}); err != nil {
			return err
		}
		_, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{
			Wrap: func(ctx context.Context, call *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
				d, err := next(ctx)
				p.Logger().Info("inner decision", "tool", call.Name, "decision", d.Verdict)
				return d, err
			},
		})
		return err
	}
	sdk.Serve(sdk.Plugin[struct{}]{Name: "approval", Inject: []string{"tools"}, Apply: apply})
}

// A stage-5 listener sees every result, in order, without holding up the
// caller.
func ExampleContext_OnResult() {
	apply := func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		_, err := p.OnResult(ctx, sdk.ResultListener{
			Observe: func(ctx context.Context, call *sdk.Call, r sdk.ToolResult) {
				code := "ok"
				if r.Error != nil {
					code = r.Error.Code
				}
				p.Logger().Info("audit", "tool", call.Name, "caller", call.Caller, "code", code, "decided_by", r.DecidedBy)
			},
		})
		return err
	}
	sdk.Serve(sdk.Plugin[struct{}]{Name: "audit", Inject: []string{"tools"}, Apply: apply})
}
