package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

func names(ps []Plugin) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// plugins writes one plugin block per name, each injecting what inject
// says (nothing written when absent).
func plugins(order []string, inject map[string][]string) string {
	var b strings.Builder
	for _, n := range order {
		fmt.Fprintf(&b, "plugin %q {\n  path = \"bin/ok\"\n", n)
		if list, ok := inject[n]; ok {
			q, _ := json.Marshal(list)
			fmt.Fprintf(&b, "  inject = %s\n", q)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func TestCheckStartOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		file    []string
		inject  map[string][]string
		answers fakeDescribe
		want    []string
	}{
		{
			name: "file order without dependencies",
			file: []string{"c", "a", "b"},
			want: []string{"c", "a", "b"},
		},
		{
			name:    "built-in services do not reorder",
			file:    []string{"a", "b"},
			inject:  map[string][]string{"a": {"tools", "points", "logger"}},
			answers: fakeDescribe{"a": {Inject: []string{"tools"}}},
			want:    []string{"a", "b"},
		},
		{
			name:    "a plugin waits for its provider",
			file:    []string{"app", "other", "db"},
			inject:  map[string][]string{"app": {"sql"}},
			answers: fakeDescribe{"db": {Provides: []string{"sql"}}},
			want:    []string{"other", "db", "app"},
		},
		{
			name:    "a chain of providers",
			file:    []string{"index", "audit", "store", "kv"},
			inject:  map[string][]string{"index": {"tools", "store"}, "store": {"kv"}},
			answers: fakeDescribe{"store": {Provides: []string{"store"}}, "kv": {Provides: []string{"kv"}}},
			want:    []string{"audit", "kv", "store", "index"},
		},
		{
			name:    "inject left out takes the declaration",
			file:    []string{"app", "db"},
			answers: fakeDescribe{"app": {Inject: []string{"sql"}}, "db": {Provides: []string{"sql"}}},
			want:    []string{"db", "app"},
		},
		{
			name:    "two providers",
			file:    []string{"app", "cache", "db"},
			inject:  map[string][]string{"app": {"sql", "cache"}},
			answers: fakeDescribe{"db": {Provides: []string{"sql"}}, "cache": {Provides: []string{"cache"}}},
			want:    []string{"cache", "db", "app"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := parseClean(t, plugins(tc.file, tc.inject))
			if diags := Check(testkit.Context(t), d, tc.answers.describe); len(diags) > 0 {
				t.Fatalf("Check:\n%s", Format(diags))
			}
			if got := names(d.Plugins); !slices.Equal(got, tc.want) {
				t.Errorf("start order = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckFillsInject(t *testing.T) {
	t.Parallel()
	d := parseClean(t, plugins([]string{"a", "b"}, map[string][]string{"b": {"tools", "points"}}))
	answers := fakeDescribe{"a": {Inject: []string{"logger"}}, "b": {Inject: []string{"tools"}}}
	if diags := Check(testkit.Context(t), d, answers.describe); len(diags) > 0 {
		t.Fatalf("Check:\n%s", Format(diags))
	}
	if got := d.Plugins[0].Inject; !slices.Equal(got, []string{"logger"}) {
		t.Errorf("a: Inject = %q, want the declared [logger]", got)
	}
	if got := d.Plugins[1].Inject; !slices.Equal(got, []string{"tools", "points"}) {
		t.Errorf("b: Inject = %q, want the file's [tools points]", got)
	}
}

// TestCheckErrors checks where each kind of problem is reported.
func TestCheckErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		src     string
		answers fakeDescribe
		want    []string // Format's lines, the file's name left out
	}{
		{
			name:    "missing provider at the inject item",
			src:     plugins([]string{"a"}, map[string][]string{"a": {"tools", "sql"}}),
			answers: fakeDescribe{},
			want:    []string{`:3:21: No provider for service: Plugin "a" injects "sql", which is neither built in (tools, points, logger) nor provided by a plugin of this deployment. No plugin provides a service.`},
		},
		{
			name:    "missing provider of a declared service at the block",
			src:     plugins([]string{"a"}, nil),
			answers: fakeDescribe{"a": {Inject: []string{"sql"}}},
			want:    []string{`:1:1: No provider for service: Plugin "a" injects "sql", which is neither built in (tools, points, logger) nor provided by a plugin of this deployment. No plugin provides a service.`},
		},
		{
			name: "cycle of two",
			src:  plugins([]string{"a", "b"}, map[string][]string{"a": {"y"}, "b": {"x"}}),
			answers: fakeDescribe{
				"a": {Provides: []string{"x"}},
				"b": {Provides: []string{"y"}},
			},
			want: []string{`:3:13: Dependency cycle: "a" → "b" → "a": "a" injects "y" from "b", "b" injects "x" from "a"; none of them can start.`},
		},
		{
			name: "config schema",
			src: `plugin "a" {
  path = "bin/ok"
  config {
    root = 1
    rules = [{ tool = "x" }, { tool = 2 }]
    extra = true
  }
}
`,
			answers: fakeDescribe{"a": {ConfigSchema: json.RawMessage(`{
				"type": "object", "additionalProperties": false, "required": ["root", "mode"],
				"properties": {
					"root": {"type": "string"},
					"mode": {"type": "string"},
					"rules": {"type": "array", "items": {"type": "object", "properties": {"tool": {"type": "string"}}}}
				}}`)}},
			want: []string{
				`:3:3: Invalid plugin config: Plugin "a": config: missing property 'mode'.`,
				`:4:5: Invalid plugin config: Plugin "a": config at /root: got number, want string.`,
				`:5:32: Invalid plugin config: Plugin "a": config at /rules/1/tool: got number, want string.`,
				`:6:5: Invalid plugin config: Plugin "a": config at /extra is not allowed by the plugin's config schema.`,
			},
		},
		{
			name: "config schema: one of, and exclusions",
			src: `plugin "a" {
  path = "bin/ok"
  config {
    prefix = "x"
  }
}
plugin "b" {
  path = "bin/ok"
  config {
    command = ["srv"]
    url     = "http://x/mcp"
  }
}
`,
			answers: fakeDescribe{
				"a": {ConfigSchema: exclusiveSchema},
				"b": {ConfigSchema: exclusiveSchema},
			},
			want: []string{
				`:3:3: Invalid plugin config: Plugin "a": config needs one of command, url.`,
				`:11:5: Invalid plugin config: Plugin "b": config at /url cannot be set together with command.`,
			},
		},
		{
			name:    "config schema without a config block",
			src:     plugins([]string{"a"}, nil),
			answers: fakeDescribe{"a": {ConfigSchema: json.RawMessage(`{"required": ["root"]}`)}},
			want:    []string{`:1:1: Invalid plugin config: Plugin "a": config: missing property 'root'.`},
		},
		{
			name:    "schema refers to another document",
			src:     plugins([]string{"a"}, nil),
			answers: fakeDescribe{"a": {ConfigSchema: json.RawMessage(`{"$ref": "file:///etc/passwd"}`)}},
			want:    []string{`:1:1: Invalid config schema: Plugin "a" declares a config schema that is not a valid JSON Schema: failing loading "file:///etc/passwd": file:///etc/passwd: a plugin's config schema cannot refer to other documents.`},
		},
		{
			name: "two critical plugins declare receipts",
			src: "host {\n  receipts = true\n}\n" + `plugin "a" {
  path     = "bin/ok"
  critical = true
}
plugin "b" {
  path     = "bin/ok"
  critical = true
}
plugin "c" {
  path = "bin/ok"
}
`,
			// c is not critical: its listener sends no receipts.
			answers: fakeDescribe{"a": {Receipts: true}, "b": {Receipts: true}, "c": {Receipts: true}},
			want:    []string{`:8:1: Two plugins declare receipts: Plugins "a" (line 4) and "b" both declare receipts; receipts are taken from one plugin only. Name it in the host block: receipts_from = "a".`},
		},
		{
			name:    "describe error",
			src:     plugins([]string{"a", "b"}, map[string][]string{"b": {"sql"}}),
			answers: fakeDescribe{"a": {Error: "exec format error"}},
			// b's missing provider is not reported: a might provide it.
			want: []string{`:1:1: Cannot describe plugin: Plugin "a" could not be asked for its declaration: exec format error.`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := parseClean(t, tc.src)
			before := names(d.Plugins)
			diags := Check(testkit.Context(t), d, tc.answers.describe)
			var got []string
			for _, line := range strings.Split(strings.TrimSuffix(Format(diags), "\n"), "\n") {
				got = append(got, strings.TrimPrefix(line, d.File))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if after := names(d.Plugins); !slices.Equal(after, before) {
				t.Errorf("Check with errors reordered the plugins: %q, was %q", after, before)
			}
		})
	}
}

// TestCheckCodePlugins checks a Deployment built in code, without source
// positions: diagnostics point at each plugin's Range.
func TestCheckCodePlugins(t *testing.T) {
	t.Parallel()
	r := hcl.Range{Filename: "code", Start: hcl.Pos{Line: 7, Column: 1}}
	d := &Deployment{Plugins: []Plugin{
		{Name: "a", Inject: []string{"sql"}, Config: json.RawMessage(`{"n":1}`), Range: r, ConfigRange: r},
	}}
	answers := fakeDescribe{"a": {ConfigSchema: json.RawMessage(`{"properties": {"n": {"type": "string"}}}`)}}
	got := Format(Check(testkit.Context(t), d, answers.describe))
	want := `code:7:1: Invalid plugin config: Plugin "a": config at /n: got number, want string.
code:7:1: No provider for service: Plugin "a" injects "sql", which is neither built in (tools, points, logger) nor provided by a plugin of this deployment. No plugin provides a service.
`
	if got != want {
		t.Errorf("Check:\n%s\nwant:\n%s", got, want)
	}
}

// TestCheckDescribe checks that describe gets the context and each plugin
// once, and that its errors (a cancelled context too) become diagnostics.
func TestCheckDescribe(t *testing.T) {
	t.Parallel()
	d := parseClean(t, plugins([]string{"a", "b", "c"}, nil))
	type key struct{}
	ctx := context.WithValue(testkit.Context(t), key{}, "v")
	var calls atomic.Int32
	seen := make(chan string, 3)
	diags := Check(ctx, d, func(ctx context.Context, p Plugin) (Declaration, error) {
		calls.Add(1)
		seen <- p.Name
		if ctx.Value(key{}) != "v" {
			return Declaration{}, errors.New("not the caller's context")
		}
		return Declaration{}, nil
	})
	if len(diags) > 0 {
		t.Fatalf("Check:\n%s", Format(diags))
	}
	close(seen)
	var got []string
	for n := range seen {
		got = append(got, n)
	}
	slices.Sort(got)
	if calls.Load() != 3 || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("describe called %d times for %q, want once each for a, b, c", calls.Load(), got)
	}

	cancelled, cancel := context.WithCancel(testkit.Context(t))
	cancel()
	diags = Check(cancelled, d, fakeDescribe{}.describe)
	if len(diags) != 3 || !strings.Contains(diags[0].Detail, context.Canceled.Error()) {
		t.Errorf("Check with a cancelled context:\n%s", Format(diags))
	}
}

// exclusiveSchema says: set command or url, not both.
var exclusiveSchema = json.RawMessage(`{
	"type": "object",
	"properties": {"command": {"type": "array"}, "url": {"type": "string"}, "prefix": {"type": "string"}},
	"anyOf": [{"required": ["command"]}, {"required": ["url"]}],
	"dependentSchemas": {"command": {"properties": {"url": false}}}
}`)

// receipts_from names a critical plugin of the deployment, and needs
// receipts; with it, two plugins declaring receipts is no error.
func TestReceiptsFrom(t *testing.T) {
	t.Parallel()
	two := `plugin "a" {
  path     = "bin/ok"
  critical = true
}
plugin "b" {
  path = "bin/ok"
}
`
	for _, tc := range []struct{ host, want string }{
		{`receipts_from = "a"`, `receipts_from without receipts`},
		{"receipts = true\n  receipts_from = \"zz\"", `receipts_from names "zz", which is no plugin of this deployment; the critical plugins are: "a".`},
		{"receipts = true\n  receipts_from = \"b\"", `receipts_from names plugin "b", which is not critical`},
	} {
		_, diags := Parse(writeDeployment(t, "host {\n  "+tc.host+"\n}\n"+two))
		if !diags.HasErrors() || !strings.Contains(Format(diags), tc.want) {
			t.Errorf("%s: %s, want %q", tc.host, Format(diags), tc.want)
		}
	}
	d := parseClean(t, "host {\n  receipts = true\n  receipts_from = \"a\"\n}\n"+two)
	if d.Host.ReceiptsFrom != "a" {
		t.Errorf("ReceiptsFrom = %q", d.Host.ReceiptsFrom)
	}
	if diags := Check(testkit.Context(t), d, fakeDescribe{"a": {Receipts: true}, "b": {Receipts: true}}.describe); diags.HasErrors() {
		t.Errorf("Check with receipts_from: %s", Format(diags))
	}
}
