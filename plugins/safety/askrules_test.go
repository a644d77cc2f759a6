package main

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

func TestAskRules(t *testing.T) {
	pol := mustCompile(t, Config{
		Ask: []AskRule{
			{Rule: Rule{Name: "deploys", Tools: []string{"deploy_*"}, Reason: "deploys need on-call"}, Approval: "oncall"},
			{Rule: Rule{Name: "etc", PathPrefix: []string{"/etc"}}, Approval: "caller"},
			{Rule: Rule{Name: "anyone", Tools: []string{"reset"}}},
		},
		AskDestructive: true,
	})
	if pol.ask == nil {
		t.Fatal("ask rules register no listener")
	}
	for _, tc := range []struct {
		name, tool, args string
		destructive      bool
		visibility       bool
		want             sdk.Decision
	}{
		{name: "a tools rule asks and names its route", tool: "deploy_prod", args: `{"v":"1"}`, destructive: true,
			want: routed(sdk.Ask(`safety rule "deploys" asks: deploys need on-call (tool "deploy_prod" matches "deploy_*"): allow this call? arguments: {v="1"}`), "deploys", "oncall")},
		{name: "a path rule names caller", tool: "read_file", args: `{"path":"/etc/passwd"}`,
			want: routed(sdk.Ask(`safety rule "etc" asks: path "/etc/passwd" is under "/etc": allow this call? arguments: {path="/etc/passwd"}`), "etc", "caller")},
		{name: "a rule without approval leaves the route to the host", tool: "reset", args: `{}`,
			want: routed(sdk.Ask(`safety rule "anyone" asks: tool "reset" matches "reset": allow this call? arguments: {}`), "anyone", "")},
		{name: "no rule matches: ask_destructive still asks", tool: "delete_file", args: `{"path":"a"}`, destructive: true,
			want: ruled(sdk.Ask(`delete_file is destructive: allow this call? arguments: {path="a"}`), askDestructiveRule)},
		{name: "no rule matches", tool: "read_file", args: `{"path":"a"}`, want: sdk.Pass()},
		{name: "the visibility question is asked by a tools rule, for any arguments", tool: "deploy_prod", visibility: true,
			want: routed(sdk.Ask(`safety rule "deploys" asks: deploys need on-call (tool "deploy_prod" matches "deploy_*"): allow this call?`), "deploys", "oncall")},
		{name: "the visibility question passes a path rule", tool: "read_file", visibility: true, want: sdk.Pass()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &sdk.Call{Execution: sdk.Execution{ID: "c1", Name: tc.tool, Arguments: json.RawMessage(tc.args), Visibility: tc.visibility,
				Tool: sdk.ToolDescriptor{Name: tc.tool, Destructive: tc.destructive}}}
			got, err := pol.ask.Filter(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestAskRulesRefused(t *testing.T) {
	_, err := compile(Config{
		Deny: []Rule{{Name: "x", Tools: []string{"a"}}},
		Ask:  []AskRule{{Rule: Rule{Name: "x", Tools: []string{"b"}}}, {Rule: Rule{Name: "nothing"}}},
	})
	if err == nil {
		t.Fatal("compiled")
	}
	for _, want := range []string{`ask "x": a second rule has this name`, `ask "nothing": the rule denies nothing in particular`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one containing %q", err, want)
		}
	}
}

// The ask rules' schema is the deny rules' with approval, which the host
// checks as an approval-route format (deployment.RouteFormat).
func TestAskSchema(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Items struct {
				Properties map[string]struct {
					Format string `json:"format"`
				} `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(configSchema), &s); err != nil {
		t.Fatal(err)
	}
	want := append(jsonNames(reflect.TypeFor[Rule]()), "approval")
	slices.Sort(want)
	if got := sortedKeys(s.Properties["ask"].Items.Properties); !slices.Equal(got, want) {
		t.Errorf("ask rule properties %q, want %q", got, want)
	}
	if _, ok := s.Properties["deny"].Items.Properties["approval"]; ok {
		t.Error("a deny rule accepts approval")
	}
	if f := s.Properties["ask"].Items.Properties["approval"].Format; f != "approval-route" {
		t.Errorf("approval's format is %q", f)
	}
	sch := compileSchema(t)
	for _, tc := range []struct {
		config string
		ok     bool
	}{
		{`{"ask":[{"name":"d","tools":["deploy_*"],"approval":"oncall"}]}`, true},
		{`{"ask":[{"name":"d","tools":["deploy_*"]}]}`, true},
		{`{"ask":[{"name":"d","approval":"oncall"}]}`, false},
		{`{"ask":[{"name":"d","tools":["x"],"approval":""}]}`, false},
		{`{"deny":[{"name":"d","tools":["x"],"approval":"oncall"}]}`, false},
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.config))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); (err == nil) != tc.ok {
			t.Errorf("%s: validate = %v, want ok %v", tc.config, err, tc.ok)
		}
	}
}

func routed(d sdk.Decision, rule, route string) sdk.Decision {
	d.Rule, d.Route = rule, route
	return d
}
