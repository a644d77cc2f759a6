package main

import (
	"reflect"
	"strings"
	"testing"
)

// TestRuleModeShadow: a rule marked mode = "shadow" is registered as a
// guard in shadow (the host applies it), with its canary; other rules are
// registered enforced; a canary without shadow, a bad mode or selector is
// refused naming the rule.
func TestRuleModeShadow(t *testing.T) {
	pol, err := compile(Config{Deny: []Rule{
		{Name: "no-list", Tools: []string{"list_dir"}, Mode: "shadow", EnforceFor: []string{"group:canary"}},
		{Name: "no-rm", Tools: []string{"delete_file"}, Mode: "enforce"},
		{Name: "no-etc", PathPrefix: []string{"/etc"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	type reg struct {
		name       string
		shadow     bool
		enforceFor []string
	}
	var got []reg
	for _, g := range pol.guards {
		got = append(got, reg{g.Name, g.Shadow, g.EnforceFor})
	}
	want := []reg{{"no-list", true, []string{"group:canary"}}, {"no-rm", false, nil}, {"no-etc", false, nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("guards %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		rule Rule
		want string
	}{
		{Rule{Name: "a", Tools: []string{"x"}, Mode: "log"}, `deny "a": mode "log": want "enforce" or "shadow"`},
		{Rule{Name: "b", Tools: []string{"x"}, EnforceFor: []string{"group:canary"}}, `deny "b": enforce_for is a canary of a rule in shadow`},
		{Rule{Name: "c", Tools: []string{"x"}, Mode: "shadow", EnforceFor: []string{"canary"}}, `deny "c": caller "canary" is not a selector`},
	} {
		if _, err := compile(Config{Deny: []Rule{tc.rule}}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.rule, err, tc.want)
		}
	}
}
