package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/admin"
)

// formSchema has one field of each kind host call asks.
const formSchema = `{"type":"object","properties":{
  "name":{"type":"string","title":"Name","description":"Your name"},
  "age":{"type":"integer"},
  "ratio":{"type":"number","default":0.5},
  "ok":{"type":"boolean"},
  "colour":{"type":"string","enum":["red","blue"]},
  "hero":{"type":"string","oneOf":[{"const":"h1","title":"Superman"},{"const":"h2","title":"Batman"}]},
  "tools":{"type":"array","items":{"enum":["saw","drill"]}}
},"required":["name","age"]}`

func elicitWith(t *testing.T, params, stdin string) (map[string]any, string) {
	t.Helper()
	var stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stderr: &stderr}
	out := elicitPrompt(e, admin.Elicitation{ID: "q1", Tool: "ev_form", Params: json.RawMessage(params)})
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("answer %s: %v", out, err)
	}
	return r, stderr.String()
}

// TestElicitForm: each field is asked in the schema's order, an answer that
// does not fit is asked again, and the content has the typed values.
func TestElicitForm(t *testing.T) {
	params := `{"mode":"form","message":"Tell me","requestedSchema":` + formSchema + `}`
	// name: empty (required, asked again) then Ann; age: a word, then 41;
	// ratio: default; ok: y; colour: a wrong choice, then blue; hero: h2;
	// tools: two of them.
	stdin := "y\n\nAnn\nold\n41\n\ny\ngreen\nblue\nh2\nsaw, drill\n"
	r, shown := elicitWith(t, params, stdin)
	if r["action"] != "accept" {
		t.Fatalf("action %v, want accept; shown:\n%s", r["action"], shown)
	}
	got, _ := json.Marshal(r["content"])
	want := `{"age":41,"colour":"blue","hero":"h2","name":"Ann","ok":true,"ratio":0.5,"tools":["saw","drill"]}`
	if string(got) != want {
		t.Errorf("content %s, want %s; shown:\n%s", got, want, shown)
	}
	for _, s := range []string{"The tool ev_form asks:\n  Tell me", "Your name", "name (Name) [string, required]", "name is required", `"old" is not an integer`, `"green" is not one of the choices`, "h2 = Batman", "any of, separated by commas: saw, drill"} {
		if !strings.Contains(shown, s) {
			t.Errorf("the user was not shown %q:\n%s", s, shown)
		}
	}
	if i, j := strings.Index(shown, "name (Name)"), strings.Index(shown, "age ["); i < 0 || j < 0 || i > j {
		t.Errorf("the fields are not asked in the schema's order:\n%s", shown)
	}
	// An optional field left empty is left out.
	r, _ = elicitWith(t, params, "y\nAnn\n41\n\n\n\n\n\n")
	if got, _ := json.Marshal(r["content"]); string(got) != `{"age":41,"name":"Ann","ratio":0.5}` {
		t.Errorf("content %s, want only the answered and defaulted fields", got)
	}
}

// TestElicitActions: n declines, c, \c and the end of stdin cancel, and a
// question that cannot be shown is declined; none is ever accepted.
func TestElicitActions(t *testing.T) {
	form := `{"message":"Tell me","requestedSchema":` + formSchema + `}`
	url := `{"mode":"url","message":"Sign in","url":"https://example.com/a\u001b[2Jb","elicitationId":"e1"}`
	for _, c := range []struct{ params, stdin, want string }{
		{form, "n\n", "decline"},
		{form, "c\n", "cancel"},
		{form, "", "cancel"},
		{form, "y\nAnn\n", "cancel"},
		{form, "y\n\\c\n", "cancel"},
		{form, "maybe\nno\n", "decline"},
		{url, "y\n", "accept"},
		{url, "n\n", "decline"},
		{url, "", "cancel"},
		{`{"mode":"form","message":"x","requestedSchema":{"properties":{"f":{"type":"object"}}}}`, "y\n", "decline"},
		{`{"mode":"telepathy","message":"x"}`, "y\n", "decline"},
		{`not json`, "y\n", "decline"},
	} {
		r, shown := elicitWith(t, c.params, c.stdin)
		if r["action"] != c.want {
			t.Errorf("%s with stdin %q: action %v, want %s; shown:\n%s", c.params, c.stdin, r["action"], c.want, shown)
		}
		if _, ok := r["content"]; ok && c.want != "accept" {
			t.Errorf("%s: a %s carries content", c.params, c.want)
		}
		if strings.Contains(shown, "\x1b") {
			t.Errorf("a control character reached the terminal:\n%q", shown)
		}
	}
}
