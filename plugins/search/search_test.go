package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeIndex stands in for the host's CallService; each test sets the
// function it needs.
type fakeIndex struct {
	callService func(ctx context.Context, service, method string, args any) (json.RawMessage, error)
}

func (f fakeIndex) CallService(ctx context.Context, service, method string, args any) (json.RawMessage, error) {
	return f.callService(ctx, service, method, args)
}

func newCall(args string) *sdk.Call {
	return &sdk.Call{Execution: sdk.Execution{ID: "c1", Name: toolName, Arguments: json.RawMessage(args)}}
}

// twoHits is an index answer with more matches than hits.
const twoHits = `{"hits":[` +
	`{"path":"pipeline/monotonic-guards.md","score":1.5,"snippet":"the **monotonic** guard rule"},` +
	`{"path":"pipeline/stages.md","score":0.25,"snippet":"**Guards** may only deny"}],"total":7,"took":"1ms"}`

func TestExecute(t *testing.T) {
	tests := []struct {
		name     string
		args     string
		answer   string // the index's result; "" means it must not be called
		indexErr error
		wantArgs string // what the index must receive
		want     string // the tool's result as JSON
		wantErr  string
	}{
		{
			name: "hits ranked as the index gave them", args: `{"q":"monotonic guard"}`, answer: twoHits,
			wantArgs: `{"q":"monotonic guard","limit":10}`,
			want: `{"query":"monotonic guard","total":7,"hits":[` +
				`{"path":"pipeline/monotonic-guards.md","score":1.5,"snippet":"the **monotonic** guard rule"},` +
				`{"path":"pipeline/stages.md","score":0.25,"snippet":"**Guards** may only deny"}]}`,
		},
		{
			name: "limit passed on, query trimmed", args: `{"q":"  guard ","limit":2}`, answer: twoHits,
			wantArgs: `{"q":"guard","limit":2}`,
			want: `{"query":"guard","total":7,"hits":[` +
				`{"path":"pipeline/monotonic-guards.md","score":1.5,"snippet":"the **monotonic** guard rule"},` +
				`{"path":"pipeline/stages.md","score":0.25,"snippet":"**Guards** may only deny"}]}`,
		},
		{
			name: "more hits than asked are cut", args: `{"q":"guard","limit":1}`, answer: twoHits,
			wantArgs: `{"q":"guard","limit":1}`,
			want:     `{"query":"guard","total":7,"hits":[{"path":"pipeline/monotonic-guards.md","score":1.5,"snippet":"the **monotonic** guard rule"}]}`,
		},
		{
			name: "nothing found is an empty list", args: `{"q":"zebra","limit":100}`, answer: `{"hits":[],"total":0}`,
			wantArgs: `{"q":"zebra","limit":100}`,
			want:     `{"query":"zebra","total":0,"hits":[]}`,
		},
		{name: "blank q", args: `{"q":"   "}`, wantErr: `"q" is blank`},
		{name: "limit out of range", args: `{"q":"x","limit":500}`, wantErr: `"limit" is 500; it must be between 1 and 100`},
		{name: "arguments not an object", args: `[1]`, wantErr: "arguments of search"},
		{
			name: "index failure passed on", args: `{"q":"x"}`, indexErr: errors.New(`call index.search: service "index" is not provided`),
			wantArgs: `{"q":"x","limit":10}`, wantErr: `call index.search: service "index" is not provided`,
		},
		{
			name: "index answer not JSON", args: `{"q":"x"}`, answer: `oops`,
			wantArgs: `{"q":"x","limit":10}`, wantErr: "index.search returned an unexpected result",
		},
		{
			name: "index answer without hits", args: `{"q":"x"}`, answer: `{"documents":3}`,
			wantArgs: `{"q":"x","limit":10}`, wantErr: `index.search returned no "hits"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			fake := fakeIndex{callService: func(ctx context.Context, service, method string, args any) (json.RawMessage, error) {
				calls++
				if service != "index" || method != "search" {
					t.Errorf("called %s.%s, want index.search", service, method)
				}
				if got, _ := json.Marshal(args); string(got) != tt.wantArgs {
					t.Errorf("index got %s, want %s", got, tt.wantArgs)
				}
				if ctx.Err() != nil {
					t.Errorf("the call's context is already done: %v", ctx.Err())
				}
				return json.RawMessage(tt.answer), tt.indexErr
			}}
			res, err := searchTool{index: fake}.execute(testkit.Context(t), newCall(tt.args))
			if wantCalls := btoi(tt.wantArgs != ""); calls != wantCalls {
				t.Errorf("index called %d times, want %d", calls, wantCalls)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("execute: %v", err)
			}
			got, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("result\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTool(t *testing.T) {
	tool := searchTool{}.tool()
	if tool.Name != "search" || !tool.ReadOnly || tool.Destructive || !tool.Idempotent || tool.Execute == nil {
		t.Errorf("tool = %+v", tool)
	}
	if tool.Timeout <= 0 || len(tool.Description) < 100 {
		t.Errorf("timeout %v, description %q", tool.Timeout, tool.Description)
	}

	// The schema the host enforces, checked against the arguments a model
	// might send.
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tool.Parameters))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("parameters.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("parameters.json")
	if err != nil {
		t.Fatalf("compile parameters: %v", err)
	}
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{`{"q":"guard"}`, true},
		{`{"q":"guard","limit":1}`, true},
		{`{"q":"guard","limit":100}`, true},
		{`{}`, false},
		{`{"q":""}`, false},
		{`{"q":"guard","limit":0}`, false},
		{`{"q":"guard","limit":101}`, false},
		{`{"q":"guard","limit":2.5}`, false},
		{`{"q":"guard","page":2}`, false},
	} {
		t.Run(tc.args, func(t *testing.T) {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(v); (err == nil) != tc.ok {
				t.Errorf("valid = %v, want %v (%v)", err == nil, tc.ok, err)
			}
		})
	}
}

func TestDefinition(t *testing.T) {
	def := definition()
	if def.Name != "search" || !slices.Equal(def.Inject, []string{"tools", "index"}) || len(def.Provides) != 0 || def.Apply == nil {
		t.Errorf("definition = %+v", def)
	}
}

var _ serviceCaller = fakeIndex{}
