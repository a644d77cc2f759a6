package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// exampleJSON is the package documentation's config block as the host hands
// it to the plugin.
const exampleJSON = `{
  "deny": [
    {"name": "no-secrets", "tools": ["read_file", "write_file"], "arguments": ["path"],
     "path_prefix": ["secrets/", "/etc"], "pattern": ["(?i)password"], "reason": "secrets are off limits"},
    {"name": "no-shell", "tools": ["shell*"]}
  ],
  "ask_destructive": true,
  "secrets": [{"arguments": "deny", "results": "redact", "allow": ["AKIAIOSFODNN7EXAMPLE"]}]
}`

// decode decodes raw as the SDK does: strictly, an unknown field is an
// error.
func decode(t *testing.T, raw string) (Config, error) {
	t.Helper()
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&cfg)
	return cfg, err
}

func TestDecodeExample(t *testing.T) {
	cfg, err := decode(t, exampleJSON)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Deny: []Rule{
			{Name: "no-secrets", Tools: []string{"read_file", "write_file"}, Arguments: []string{"path"},
				PathPrefix: []string{"secrets/", "/etc"}, Pattern: []string{"(?i)password"}, Reason: "secrets are off limits"},
			{Name: "no-shell", Tools: []string{"shell*"}},
		},
		AskDestructive: true,
		Secrets:        []Secrets{{Arguments: "deny", Results: "redact", Allow: []string{"AKIAIOSFODNN7EXAMPLE"}}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("decoded\n %+v\nwant\n %+v", cfg, want)
	}
	pol := mustCompile(t, cfg)
	if len(pol.guards) != 3 || pol.guards[0].Name != "secrets" || pol.guards[1].Name != "no-secrets" || pol.guards[2].Name != "no-shell" {
		t.Fatalf("guards %+v, want secrets, no-secrets, no-shell", pol.guards)
	}
	if pol.guards[0].Tools != nil || !slices.Equal(pol.guards[1].Tools, []string{"read_file", "write_file"}) || pol.guards[2].Tools != nil {
		t.Errorf("interest filters %q, %q and %q", pol.guards[0].Tools, pol.guards[1].Tools, pol.guards[2].Tools)
	}
	if pol.review == nil || pol.review.Filter == nil || pol.review.Tools != nil {
		t.Fatal("results = redact is not a stage-4 filter for every tool")
	}
	if pol.ask == nil || pol.ask.Filter == nil || pol.ask.Wrap != nil {
		t.Fatal("ask_destructive is not a filter listener")
	}
	for _, tc := range []struct{ tool, args, want string }{
		{"read_file", `{"path":"a/../secrets/x"}`, `denied by safety rule "no-secrets": secrets are off limits (path "a/../secrets/x" is under "secrets/")`},
		{"write_file", `{"path":"notes/password.txt","content":""}`, `denied by safety rule "no-secrets": secrets are off limits (path "notes/password.txt" matches "(?i)password")`},
		{"shell_exec", `{"command":"ls"}`, `denied by safety rule "no-shell": tool "shell_exec" matches "shell*"`},
		{"read_file", `{"path":"docs/readme.md"}`, ``},
		{"write_file", `{"path":"a.txt","content":"AKIAIOSFODNN7EXAMPLE"}`, ``},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			if got := firstDenial(t, pol, call(tc.tool, tc.args)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"an unknown attribute", `{"deny":[{"name":"r","tool":["x"]}]}`, `unknown field "tool"`},
		{"an unknown top-level key", `{"allow":[]}`, `unknown field "allow"`},
		{"a string for a list", `{"deny":[{"name":"r","tools":"x"}]}`, `cannot unmarshal string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decode(t, tc.raw); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// compileSchema compiles configSchema as the host does when it validates a
// deployment: formats are assertions.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(configSchema))
	if err != nil {
		t.Fatalf("configSchema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("plugin-config:safety", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("plugin-config:safety")
	if err != nil {
		t.Fatalf("configSchema is not a valid JSON Schema: %v", err)
	}
	return sch
}

var english = message.NewPrinter(language.English)

// leafErrors flattens a validation error into "location: message" lines.
func leafErrors(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, "/"+strings.Join(e.InstanceLocation, "/")+": "+e.ErrorKind.LocalizedString(english))
	}
	walk(ve)
	return out
}

func TestSchema(t *testing.T) {
	sch := compileSchema(t)
	for _, tc := range []struct {
		name, config string
		wants        []string // substrings of the leaf errors; none means valid
	}{
		{name: "the documented example", config: exampleJSON},
		{name: "no config", config: `{}`},
		{name: "a bad regexp", config: `{"deny":[{"name":"r","pattern":["ok","(?i"]}]}`,
			wants: []string{`/deny/0/pattern/1: `, `regex`}},
		{name: "a Perl-only regexp", config: `{"deny":[{"name":"r","pattern":["(?<=a)b"]}]}`,
			wants: []string{`/deny/0/pattern/0: `}},
		{name: "a bad glob", config: `{"deny":[{"name":"r","tools":["ok","shell["]}]}`,
			wants: []string{`/deny/0/tools/1: `}},
		{name: "an unknown attribute", config: `{"deny":[{"name":"r","tools":["x"],"tool":"y"}]}`,
			wants: []string{`/deny/0: `, `tool`}},
		{name: "an unknown top-level key", config: `{"allow":[]}`, wants: []string{`/: `, `allow`}},
		{name: "a rule without a label", config: `{"deny":[{"tools":["x"]}]}`, wants: []string{`/deny/0: `, `name`}},
		{name: "a rule that names nothing", config: `{"deny":[{"name":"r","reason":"why"}]}`,
			wants: []string{`/deny/0: `, `tools`, `path_prefix`, `pattern`}},
		{name: "arguments without a check", config: `{"deny":[{"name":"r","tools":["x"],"arguments":["cmd"]}]}`,
			wants: []string{`/deny/0: `, `path_prefix`, `pattern`}},
		{name: "an empty list", config: `{"deny":[{"name":"r","tools":[]}]}`, wants: []string{`/deny/0/tools: `}},
		{name: "an empty prefix", config: `{"deny":[{"name":"r","path_prefix":[""]}]}`, wants: []string{`/deny/0/path_prefix/0: `}},
		{name: "a wrong type", config: `{"ask_destructive":"yes"}`, wants: []string{`/ask_destructive: `}},
		{name: "a rule in shadow with a canary", config: `{"deny":[{"name":"r","tools":["x"],"mode":"shadow","enforce_for":["group:canary"]}]}`},
		{name: "a rule enforced", config: `{"deny":[{"name":"r","tools":["x"],"mode":"enforce"}]}`},
		{name: "a bad mode", config: `{"deny":[{"name":"r","tools":["x"],"mode":"log"}]}`, wants: []string{`/deny/0/mode: `}},
		{name: "a canary without shadow", config: `{"deny":[{"name":"r","tools":["x"],"enforce_for":["group:canary"]}]}`, wants: []string{`/deny/0`, `mode`}},
		{name: "a canary of an enforced rule", config: `{"deny":[{"name":"r","tools":["x"],"mode":"enforce","enforce_for":["group:canary"]}]}`, wants: []string{`/deny/0/mode: `}},
		{name: "a secrets block", config: `{"secrets":[{"arguments":"ask","results":"block","allow":["x"]}]}`},
		{name: "an empty secrets block", config: `{"secrets":[{}]}`},
		{name: "a bad arguments mode", config: `{"secrets":[{"arguments":"warn"}]}`, wants: []string{`/secrets/0/arguments: `, `deny`}},
		{name: "a bad results mode", config: `{"secrets":[{"results":"mask"}]}`, wants: []string{`/secrets/0/results: `, `redact`}},
		{name: "an unknown secrets attribute", config: `{"secrets":[{"argument":"deny"}]}`, wants: []string{`/secrets/0: `, `argument`}},
		{name: "two secrets blocks", config: `{"secrets":[{},{}]}`, wants: []string{`/secrets: `}},
		{name: "an empty allow entry", config: `{"secrets":[{"allow":[""]}]}`, wants: []string{`/secrets/0/allow/0: `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(inst)
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", leafErrors(err))
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			all := strings.Join(leafErrors(err), "\n")
			for _, w := range tc.wants {
				if !strings.Contains(all, w) {
					t.Errorf("errors\n%s\ndo not contain %q", all, w)
				}
			}
		})
	}
}

// TestSchemaAgreesWithCompile checks that what the schema accepts compile
// accepts, and the other way round, on every rule of TestSchema and
// TestCompileErrors worth comparing: the host and the plugin must not
// disagree about which configurations are valid.
func TestSchemaAgreesWithCompile(t *testing.T) {
	sch := compileSchema(t)
	for _, raw := range []string{
		exampleJSON,
		`{"deny":[{"name":"r","pattern":["(?i"]}]}`,
		`{"deny":[{"name":"r","pattern":["[z-a]"]}]}`,
		`{"deny":[{"name":"r","tools":["shell["]}]}`,
		`{"deny":[{"name":"r","tools":["a\\*b"]}]}`,
		`{"deny":[{"name":"r","tools":["[^a-c]x"]}]}`,
		`{"deny":[{"name":"r","reason":"why"}]}`,
		`{"deny":[{"name":"r","tools":["x"],"arguments":["cmd"]}]}`,
		`{"deny":[{"name":"r","arguments":["cmd"],"pattern":["rm"]}]}`,
		`{"deny":[{"name":"r","path_prefix":[""]}]}`,
		`{"deny":[{"name":"","tools":["x"]}]}`,
		`{"secrets":[{"arguments":"deny","results":"redact","allow":["x"]}]}`,
		`{"secrets":[{"arguments":"warn"}]}`,
		`{"deny":[{"name":"r","tools":["x"],"mode":"shadow","enforce_for":["group:canary"]}]}`,
		`{"deny":[{"name":"r","tools":["x"],"mode":"log"}]}`,
		`{"deny":[{"name":"r","tools":["x"],"enforce_for":["group:canary"]}]}`,
		`{"deny":[{"name":"r","tools":["x"],"mode":"enforce","enforce_for":["group:canary"]}]}`,
		`{"secrets":[{"results":"mask"}]}`,
		`{"secrets":[{},{}]}`,
		`{"secrets":[{"allow":[""]}]}`,
	} {
		t.Run(raw, func(t *testing.T) {
			cfg, err := decode(t, raw)
			if err != nil {
				t.Fatal(err)
			}
			inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(raw))
			schemaErr := sch.Validate(inst)
			_, compileErr := compile(cfg)
			if (schemaErr == nil) != (compileErr == nil) {
				t.Errorf("schema error: %v\ncompile error: %v", schemaErr, compileErr)
			}
		})
	}
}

// TestSchemaMatchesConfig keeps the declared schema and the structs the
// configuration is decoded into in step: the same property names at each
// level.
func TestSchemaMatchesConfig(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Items struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(configSchema), &s); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(s.Properties), jsonNames(reflect.TypeFor[Config]()); !slices.Equal(got, want) {
		t.Errorf("top-level properties %q, Config fields %q", got, want)
	}
	if got, want := sortedKeys(s.Properties["deny"].Items.Properties), jsonNames(reflect.TypeFor[Rule]()); !slices.Equal(got, want) {
		t.Errorf("rule properties %q, Rule fields %q", got, want)
	}
	if got, want := sortedKeys(s.Properties["secrets"].Items.Properties), jsonNames(reflect.TypeFor[Secrets]()); !slices.Equal(got, want) {
		t.Errorf("secrets properties %q, Secrets fields %q", got, want)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// TestGlobPatternAgreesWithPathMatch checks the schema's glob pattern
// against path.Match on every string of up to five characters over the
// characters that matter to its syntax, so the host refuses exactly the
// globs the plugin would.
func TestGlobPatternAgreesWithPathMatch(t *testing.T) {
	var unescaped string
	if err := json.Unmarshal([]byte(`"`+globPatternJSON+`"`), &unescaped); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(unescaped)
	alphabet := []byte(`a*?[]^-\`)
	var walk func(prefix []byte)
	checked := 0
	walk = func(prefix []byte) {
		p := string(prefix)
		_, err := path.Match(p, "")
		if got, want := re.MatchString(p), err == nil; got != want {
			t.Errorf("glob %q: schema says valid=%v, path.Match says valid=%v", p, got, want)
		}
		checked++
		if len(prefix) == 5 {
			return
		}
		for _, c := range alphabet {
			walk(append(bytes.Clone(prefix), c))
		}
	}
	walk(nil)
	if checked < 37000 {
		t.Fatalf("checked only %d globs", checked)
	}
}
