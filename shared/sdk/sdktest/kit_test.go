package sdktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/sdk/sdktest"
	"github.com/plugkit-go/plugkit/shared/wire"
)

type notesConfig struct {
	Limit int `json:"limit"`
}

// notes is a plugin with something at every stage: a tool that may call a
// service of the host, an Ask for long notes and an approver, a guard, a
// stage-3 wrapper, a stage-4 filter and an observer.
func notes(seen *[]string) sdk.Plugin[notesConfig] {
	return sdk.Plugin[notesConfig]{
		Name:   "notes",
		Inject: []string{"tools", "clock"},
		Apply: func(ctx context.Context, p *sdk.Context, cfg notesConfig) error {
			if _, err := p.RegisterTool(ctx, sdk.Tool{
				Name: "note", Description: "Keeps a note.",
				Parameters: `{"type":"object","properties":{"text":{"type":"string"}}}`,
				Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
					var in struct{ Text string }
					if err := call.Bind(&in); err != nil {
						return nil, err
					}
					if in.Text == "time" {
						return p.CallService(ctx, "clock", "now", nil)
					}
					if in.Text == "fail" {
						return nil, errors.New("cannot keep that")
					}
					return "kept " + in.Text, nil
				},
			}); err != nil {
				return err
			}
			if _, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{Name: "length", Filter: func(ctx context.Context, call *sdk.Call) (sdk.Decision, error) {
				if len(call.Arguments) > cfg.Limit {
					return sdk.Ask("a long note?"), nil
				}
				return sdk.Pass(), nil
			}}); err != nil {
				return err
			}
			if _, err := p.SetApprover(ctx, sdk.Approver{Approve: func(ctx context.Context, call *sdk.Call, q string) (sdk.Approval, error) {
				if strings.Contains(string(call.Arguments), "please") {
					return sdk.Approve(), nil
				}
				return sdk.Reject("no: " + q), nil
			}}); err != nil {
				return err
			}
			if _, err := p.AddGuard(ctx, sdk.Guard{Name: "no-secrets", Check: func(ctx context.Context, call *sdk.Call) (string, error) {
				if strings.Contains(string(call.Arguments), "secret") {
					return "no secrets in notes", nil
				}
				return "", nil
			}}); err != nil {
				return err
			}
			if _, err := p.OnExecute(ctx, sdk.ExecuteListener{Wrap: func(ctx context.Context, call *sdk.Call, next sdk.NextOutcome) (sdk.Outcome, error) {
				*seen = append(*seen, "wrap "+call.Name)
				return next(ctx)
			}}); err != nil {
				return err
			}
			if _, err := p.OnPostExecute(ctx, sdk.PostExecuteListener{Filter: func(ctx context.Context, call *sdk.Call, out sdk.Outcome) (sdk.Review, error) {
				if strings.Contains(string(out.Value), "rude") {
					return sdk.Replace("kept [redacted]"), nil
				}
				return sdk.PassReview(), nil
			}}); err != nil {
				return err
			}
			_, err := p.OnResult(ctx, sdk.ResultListener{Observe: func(ctx context.Context, call *sdk.Call, r sdk.ToolResult) {
				code := "ok"
				if r.Error != nil {
					code = string(r.Error.Code)
				}
				*seen = append(*seen, "result "+code)
			}})
			return err
		},
	}
}

func TestCallThroughEveryStage(t *testing.T) {
	var seen []string
	host := &sdktest.Host{CallService: func(ctx context.Context, r *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error) {
		return &pb.HostCallServiceResponse{ResultJson: []byte(`"` + r.GetService() + "." + r.GetMethod() + `"`)}, nil
	}}
	p := sdktest.Start(t, notes(&seen), sdktest.Options{Host: host, Config: `{"limit":30}`})

	kinds := map[string]int{}
	for _, r := range p.Registrations() {
		kinds[r.Kind]++
	}
	if kinds["RegisterTool"] != 1 || kinds["Listen"] != 4 || kinds["AddGuard"] != 1 || kinds["SetApprover"] != 1 {
		t.Errorf("registrations %v", kinds)
	}
	if tools := p.Tools(); len(tools) != 1 || tools[0].Name != "note" {
		t.Errorf("tools %+v", tools)
	}

	for _, c := range []struct{ args, want string }{
		{`{"text":"milk"}`, `ok "kept milk"`},
		{`{"text":"time"}`, `ok "clock.now"`},
		{`{"text":"a secret"}`, `DENIED no secrets in notes`},
		{`{"text":"a much longer note than that"}`, `DENIED no: a long note?`},
		{`{"text":"a longer note, please, kept"}`, `ok "kept a longer note, please, kept"`},
		{`{"text":"rude"}`, `ok "kept [redacted]"`},
		{`{"text":"fail"}`, `TOOL_ERROR cannot keep that`},
	} {
		res, err := p.Call(t.Context(), "note", c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		got := "ok " + string(res.Value)
		if !res.OK {
			got = string(res.Error.Code) + " " + res.Error.Message
		}
		if got != c.want {
			t.Errorf("Call(note, %s) = %s, want %s", c.args, got, c.want)
		}
	}
	if res, _ := p.Call(t.Context(), "other", ""); res.Error == nil || res.Error.Code != wire.CodeUnknownTool {
		t.Errorf("a call of a tool the plugin does not have = %+v, want UNKNOWN_TOOL", res)
	}
	want := "wrap note,result ok,wrap note,result ok,result DENIED,result DENIED,wrap note,result ok,wrap note,result ok,wrap note,result TOOL_ERROR,result UNKNOWN_TOOL"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("stages seen:\n%s\nwant\n%s", got, want)
	}
}

func TestFailingListenerDenies(t *testing.T) {
	def := sdk.Plugin[struct{}]{Name: "broken", Inject: []string{"tools"}, Apply: func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		if _, err := p.RegisterTool(ctx, sdk.Tool{Name: "t", Description: "d", Execute: func(context.Context, *sdk.Call) (any, error) { return 1, nil }}); err != nil {
			return err
		}
		_, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{Filter: func(context.Context, *sdk.Call) (sdk.Decision, error) {
			panic("listener bug")
		}})
		return err
	}}
	p := sdktest.Start(t, def, sdktest.Options{})
	res, err := p.Call(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Error.Code != wire.CodeDenied || !strings.Contains(res.Error.Message, "listener bug") {
		t.Errorf("a call past a panicking stage-1 listener = %+v, want DENIED naming the panic", res)
	}
}

func TestHostRefusesRegistration(t *testing.T) {
	def := sdk.Plugin[struct{}]{Name: "dup", Inject: []string{"tools"}, Apply: func(ctx context.Context, p *sdk.Context, _ struct{}) error {
		_, err := p.RegisterTool(ctx, sdk.Tool{Name: "t", Description: "d", Execute: func(context.Context, *sdk.Call) (any, error) { return 1, nil }})
		return err
	}}
	p := sdktest.StartUnapplied(t, def, sdktest.Options{Host: &sdktest.Host{Register: func(string, proto.Message) (string, error) {
		return "", errors.New("tool name taken")
	}}})
	if err := p.Apply(t.Context(), ""); err == nil || !strings.Contains(err.Error(), "tool name taken") {
		t.Errorf("Apply when the host refuses the tool = %v, want the host's reason", err)
	}
}

func TestConformance(t *testing.T) {
	var seen []string
	sdktest.Conformance(t, notes(&seen), sdktest.Options{Config: `{"limit":30}`})
}

func TestApplyDecodesStrictly(t *testing.T) {
	var seen []string
	p := sdktest.StartUnapplied(t, notes(&seen), sdktest.Options{})
	err := p.Apply(t.Context(), `{"limit":1,"limt":2}`)
	if err == nil || !strings.Contains(err.Error(), "limt") {
		t.Errorf("Apply with a misspelt key = %v, want an error naming it", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(p.Describe.GetConfigSchemaJson(), &cfg); err != nil || cfg["type"] != "object" {
		t.Errorf("config schema %s", p.Describe.GetConfigSchemaJson())
	}
}
