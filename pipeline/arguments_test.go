package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

func TestCanonicalArguments(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"keys_sorted", `{"b":1,"a":2,"c":3}`, `{"a":2,"b":1,"c":3}`},
		{"nested_keys_sorted_arrays_kept", `{"z":[3,1,{"y":1,"x":2}],"a":{"d":1,"c":2}}`, `{"a":{"c":2,"d":1},"z":[3,1,{"x":2,"y":1}]}`},
		{"keys_sorted_by_bytes", `{"b":1,"B":2,"é":3,"a\"":4}`, `{"B":2,"a\"":4,"b":1,"é":3}`},
		{"insignificant_space_removed", " \n{ \"a\" : 1 ,\t\"b\" :[ 1 , 2 ] }\n ", `{"a":1,"b":[1,2]}`},
		{"numbers_as_written", `{"a":1.50,"b":1e3,"c":-0,"d":12345678901234567890123,"e":0.1E-2,"f":-7}`, `{"a":1.50,"b":1e3,"c":-0,"d":12345678901234567890123,"e":0.1E-2,"f":-7}`},
		{"literals", `{"t":true,"f":false,"n":null}`, `{"f":false,"n":null,"t":true}`},
		{"required_escapes", `{"s":"quote \" backslash \\ nl \n tab \t cr \r"}`, `{"s":"quote \" backslash \\ nl \n tab \t cr \r"}`},
		{"control_characters", `{"s":"\u0001\u001f\b\f"}`, `{"s":"\u0001\u001f\u0008\u000c"}`},
		{"needless_escapes_removed", `{"s":"\u00e9\u4e2d\/\u0041"}`, `{"s":"é中/A"}`},
		{"no_html_escaping", `{"s":"<a href='x'>&</a>"}`, `{"s":"<a href='x'>&</a>"}`},
		{"surrogate_pair", `{"s":"\ud83d\ude00"}`, `{"s":"😀"}`},
		{"escaped_keys", `{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{"empty_object", `{}`, `{}`},
		{"no_arguments", ``, `{}`},
		{"blank_arguments", "  \n", `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			k, tools := newTools(t, pipeline.Options{})
			var mu sync.Mutex
			var seen []string
			see := func(e *pipeline.Execution) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, e.ArgumentsJSON())
			}
			load(t, k, fakePlugin{
				name: "P",
				tools: []pipeline.Tool{tool("echo", func(ctx context.Context, e *pipeline.Execution) (any, error) {
					see(e)
					return e.Arguments(), nil
				})},
				pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
					see(e)
					return next(ctx), nil
				},
				guard:  func(ctx context.Context, e *pipeline.Execution) (string, error) { see(e); return "", nil },
				result: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error { see(e); return nil },
			}.plugin())
			r := tools.Execute(ctx, "echo", json.RawMessage(tc.in), "client")
			wantCode(t, r, "")
			if got := string(r.Value.(json.RawMessage)); got != tc.want {
				t.Errorf("canonical = %s, want %s", got, tc.want)
			}
			// History, audit and execution agree: every stage saw the same bytes.
			if len(seen) != 4 {
				t.Fatalf("%d stages saw the call, want 4", len(seen))
			}
			for _, s := range seen {
				if s != tc.want {
					t.Errorf("a stage saw %s, want %s", s, tc.want)
				}
			}
		})
	}
}

func TestArgumentsNotJSON(t *testing.T) {
	for _, tc := range []struct{ name, in, says string }{
		{"truncated", `{"a":1`, "not valid JSON"},
		{"trailing_data", `{} {}`, "not valid JSON"},
		{"not_json", `hello`, "not valid JSON"},
		{"array_against_default_schema", `[1,2]`, "invalid arguments at /"},
		{"null_against_default_schema", `null`, "invalid arguments at /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			k, tools := newTools(t, pipeline.Options{})
			var ran counter
			load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{tool("echo", func(context.Context, *pipeline.Execution) (any, error) {
				ran.inc()
				return nil, nil
			})}}.plugin())
			r := tools.Execute(ctx, "echo", json.RawMessage(tc.in), "client")
			wantCode(t, r, pipeline.CodeInvalidArguments)
			if !strings.Contains(r.Error.Message, tc.says) {
				t.Errorf("message %q does not say %q", r.Error.Message, tc.says)
			}
			if ran.get() != 0 {
				t.Error("the body ran")
			}
		})
	}
}

func TestInvalidArgumentsNamePaths(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	schema := `{"type":"object","properties":{"a":{"type":"number"},"list":{"type":"array","items":{"type":"string"}},"a/b":{"type":"string"}},"required":["a"]}`
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{{
		ToolDescriptor: wire.ToolDescriptor{
			Name: "t", Description: "d", Parameters: json.RawMessage(schema),
		},
		Execute: okBody(1),
	}}}.plugin())
	for _, tc := range []struct{ args, path string }{
		{`{"a":"x"}`, "/a"},
		{`{"a":1,"list":["ok",2]}`, "/list/1"},
		{`{"a":1,"a/b":3}`, "/a~1b"},
		{`{}`, "at /: "},
	} {
		r := tools.Execute(ctx, "t", json.RawMessage(tc.args), "client")
		wantCode(t, r, pipeline.CodeInvalidArguments)
		if !strings.Contains(r.Error.Message, tc.path) {
			t.Errorf("%s: message %q does not name %s", tc.args, r.Error.Message, tc.path)
		}
	}
}

// No listener can change the arguments another stage sees: Decode gives a
// fresh value each time and Arguments a copy.
func TestArgumentsCannotBeChanged(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	const want = `{"a":2,"b":3,"list":[1,2]}`
	type args struct {
		A, B float64
		List []int
	}
	var bodySaw string
	var bodyArgs args
	load(t, k,
		fakePlugin{
			name: "meddler",
			pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				var m map[string]any
				if err := e.Decode(&m); err != nil {
					return pipeline.Decision{}, err
				}
				m["a"] = 1000.0
				m["list"].([]any)[0] = 99.0
				delete(m, "b")
				var again map[string]any
				if err := e.Decode(&again); err != nil {
					return pipeline.Decision{}, err
				}
				if again["a"] != 2.0 || again["b"] != 3.0 || again["list"].([]any)[0] != 1.0 {
					t.Errorf("a second Decode returned the mutated value %v", again)
				}
				var s args
				_ = e.Decode(&s)
				s.List[0] = 42
				raw := e.Arguments()
				for i := range raw {
					raw[i] = ' '
				}
				return next(ctx), nil
			},
		}.plugin(),
		fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", func(ctx context.Context, e *pipeline.Execution) (any, error) {
			bodySaw = e.ArgumentsJSON()
			return nil, e.Decode(&bodyArgs)
		})}}.plugin(),
	)
	wantCode(t, tools.Execute(ctx, "t", json.RawMessage(`{"list":[1,2],"b":3,"a":2}`), "client"), "")
	if bodySaw != want {
		t.Errorf("the body saw %s, want %s", bodySaw, want)
	}
	if bodyArgs.A != 2 || bodyArgs.B != 3 || len(bodyArgs.List) != 2 || bodyArgs.List[0] != 1 {
		t.Errorf("the body decoded %+v", bodyArgs)
	}
}

// jsonschema panics on a bounded number with a huge exponent: the call is
// refused as INVALID_ARGUMENTS, not a host error.
func TestHugeExponentIsInvalidArguments(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k, fakePlugin{name: "p", tools: []pipeline.Tool{{
		ToolDescriptor: wire.ToolDescriptor{
			Name: "limited", Description: "Takes a bounded number.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","maximum":10}}}`),
		},
		Execute: func(context.Context, *pipeline.Execution) (any, error) { return "ran", nil },
	}}}.plugin())
	r := tools.Execute(testkit.Context(t), "limited", json.RawMessage(`{"n":1e9999999}`), "t")
	if r.OK || r.Error.Code != pipeline.CodeInvalidArguments {
		t.Fatalf("result = %+v, want INVALID_ARGUMENTS", r)
	}
	if !strings.Contains(r.Error.Message, "out of range") {
		t.Fatalf("message %q does not say why", r.Error.Message)
	}
}

// A call with several faults is worded the same way every time, whatever
// order the validator found them in.
func TestInvalidArgumentsMessageIsStable(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k, fakePlugin{name: "p", tools: []pipeline.Tool{{
		ToolDescriptor: wire.ToolDescriptor{
			Name: "many", Description: "Takes many numbers.",
			// A pattern keeps the tool on jsonschema, whose causes come in
			// map order.
			Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"c":{"type":"number"},"d":{"type":"string","pattern":"^x"}}}`),
		},
		Execute: func(context.Context, *pipeline.Execution) (any, error) { return "ran", nil },
	}}}.plugin())
	first := ""
	for i := range 50 {
		r := tools.Execute(testkit.Context(t), "many", json.RawMessage(`{"a":"1","b":"2","c":"3","d":"y"}`), "t")
		if r.OK || r.Error.Code != pipeline.CodeInvalidArguments {
			t.Fatalf("result = %+v", r)
		}
		if i == 0 {
			first = r.Error.Message
		} else if r.Error.Message != first {
			t.Fatalf("call %d worded %q, the first %q", i, r.Error.Message, first)
		}
	}
	for _, at := range []string{"at /a", "at /b", "at /c", "at /d"} {
		if !strings.Contains(first, at) {
			t.Errorf("%q does not name %s", first, at)
		}
	}
}
