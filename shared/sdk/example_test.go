package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/sdk/sdktest"
)

// run applies plugin with config in-process against a fake host
// (sdktest.New), calls tool with args through the plugin's stages and
// prints what the caller gets: what a plugin's main would do with
// sdk.Serve(plugin), under a host, made visible.
func run[C any](plugin sdk.Plugin[C], config, tool, args string) {
	ctx := context.Background()
	p, err := sdktest.New(ctx, plugin, sdktest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	if err := p.Apply(ctx, config); err != nil {
		fmt.Println(err)
		return
	}
	res, err := p.Call(ctx, tool, args)
	if err != nil {
		fmt.Println(err)
	}
	if res.OK {
		fmt.Println("ok:", string(res.Value))
	} else {
		fmt.Printf("%s: %s\n", res.Error.Code, res.Error.Message)
	}
}

// hello is a minimal tool plugin. Its configuration is decoded strictly
// into Config, and the schema the host checks the deployment's block
// against is derived from the same struct.
type Config struct {
	Greeting string `json:"greeting,omitempty" doc:"how to greet"`
}

var hello = sdk.Plugin[Config]{
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
}

// A minimal tool plugin: its main is sdk.Serve(hello), and nothing else.
func Example() {
	// In the plugin's main: sdk.Serve(hello)
	run(hello, `{"greeting":"Hello"}`, "hello", `{"name":"Ada"}`)
	// Output: ok: "Hello, Ada!"
}

// A guard can only deny: return a reason, or "" to stay out of the way.
func ExampleContext_AddGuard() {
	apply := func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		if err := hello.Apply(ctx, p, Config{Greeting: "Deleted"}); err != nil {
			return err
		}
		_, err := p.AddGuard(ctx, sdk.Guard{
			Name:  "no-root",
			Tools: []string{"hello"}, // the host skips the RPC for other tools
			Check: func(ctx context.Context, call *sdk.Call) (string, error) {
				var args struct{ Name string }
				if err := call.Bind(&args); err != nil {
					return "", err // an error denies: guards fail closed
				}
				if args.Name == "root" {
					return "refusing to greet root", nil
				}
				return "", nil
			},
		})
		return err
	}
	safety := sdk.Plugin[struct{}]{Name: "safety", Inject: []string{"tools"}, Apply: apply}
	run(safety, ``, "hello", `{"name":"root"}`)
	run(safety, ``, "hello", `{"name":"tmp"}`)
	// Output:
	// DENIED: refusing to greet root
	// ok: "Deleted, tmp!"
}

// Stage-1 listeners come in two forms. A filter answers in one RPC; Pass
// lets the host continue the chain. A wrapper calls next (a second RPC, back
// to the host) and may override what the rest of the chain decided.
func ExampleContext_OnPreExecute() {
	apply := func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		if err := hello.Apply(ctx, p, Config{Greeting: "Hi"}); err != nil {
			return err
		}
		if _, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{
			Wrap: func(ctx context.Context, call *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
				d, err := next(ctx)
				fmt.Println("the rest of the chain says:", d.Verdict, d.Reason)
				return d, err
			},
		}); err != nil {
			return err
		}
		_, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{
			Filter: func(ctx context.Context, call *sdk.Call) (sdk.Decision, error) {
				if call.Caller != "admin" {
					return sdk.Deny(call.Caller + " may not greet"), nil
				}
				return sdk.Pass(), nil
			},
		})
		return err
	}
	run(sdk.Plugin[struct{}]{Name: "policy", Inject: []string{"tools"}, Apply: apply}, ``, "hello", `{"name":"Ada"}`)
	// Output:
	// the rest of the chain says: deny sdktest may not greet
	// DENIED: sdktest may not greet
}

// A stage-5 listener sees every result, in order, without holding up the
// caller.
func ExampleContext_OnResult() {
	apply := func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		if err := hello.Apply(ctx, p, Config{Greeting: "Hello"}); err != nil {
			return err
		}
		_, err := p.OnResult(ctx, sdk.ResultListener{
			Observe: func(ctx context.Context, call *sdk.Call, r sdk.ToolResult) {
				code := "ok"
				if r.Error != nil {
					code = string(r.Error.Code)
				}
				fmt.Println("audit:", call.Name, "by", call.Caller, code)
			},
		})
		return err
	}
	run(sdk.Plugin[struct{}]{Name: "audit", Inject: []string{"tools"}, Apply: apply}, ``, "hello", `{"name":"Ada"}`)
	// Output:
	// audit: hello by sdktest ok
	// ok: "Hello, Ada!"
}

// A stage-4 filter reviews a tool's outcome before the caller sees it:
// Accept keeps it, Replace changes the value, Block refuses it.
func ExampleContext_OnPostExecute() {
	apply := func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		if err := hello.Apply(ctx, p, Config{Greeting: "Hello"}); err != nil {
			return err
		}
		_, err := p.OnPostExecute(ctx, sdk.PostExecuteListener{
			Name:  "shout",
			Tools: []string{"hello"},
			Filter: func(_ context.Context, call *sdk.Call, out sdk.Outcome) (sdk.Review, error) {
				var greeting string
				if !out.OK || json.Unmarshal(out.Value, &greeting) != nil {
					return sdk.Accept(), nil
				}
				return sdk.Replace(strings.ToUpper(greeting)), nil
			},
		})
		return err
	}
	run(sdk.Plugin[struct{}]{Name: "shout", Inject: []string{"tools"}, Apply: apply}, ``, "hello", `{"name":"Ada"}`)
	// Output:
	// ok: "HELLO, ADA!"
}
