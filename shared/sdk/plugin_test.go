package sdk

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPluginBuild(t *testing.T) {
	apply := func(context.Context, *Context, struct{}) error { return nil }
	for _, tc := range []struct {
		name string
		def  Plugin[struct{}]
		want []string
	}{
		{name: "every problem is reported", def: Plugin[struct{}]{Inject: []string{"tools", "", "tools"}, Provides: []string{"index", "index"}},
			want: []string{"Name is empty", "Apply is nil", "Inject[1] is empty", `Inject lists "tools" twice`, `Provides lists "index" twice`}},
		{name: "declared schema must be JSON", def: Plugin[struct{}]{Name: "x", Apply: apply, ConfigSchema: "{"},
			want: []string{"ConfigSchema is not valid JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.def.build()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("an interface config type has no schema", func(t *testing.T) {
		_, err := Plugin[any]{Name: "x", Apply: func(context.Context, *Context, any) error { return nil }}.build()
		if err == nil || !strings.Contains(err.Error(), "interface") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a declared schema wins", func(t *testing.T) {
		d, err := Plugin[struct{}]{Name: "x", Apply: apply, ConfigSchema: `{"type":"object"}`}.build()
		if err != nil || string(d.schema) != `{"type":"object"}` {
			t.Errorf("schema = %s, %v", d.schema, err)
		}
	})
}

type schemaBase struct {
	Region string `json:"region"`
}

type schemaConfig struct {
	schemaBase
	Root     string            `json:"root" doc:"folder to index"`
	Limit    int               `json:"limit,omitempty"`
	Ratio    *float64          `json:"ratio"`
	Tags     []string          `json:"tags,omitempty"`
	Labels   map[string]bool   `json:"labels,omitempty"`
	Timeout  time.Duration     `json:"timeout,omitempty"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Nested   struct{ On bool } `json:"nested"`
	Skipped  string            `json:"-"`
	unexport string
}

func TestConfigSchema(t *testing.T) {
	_ = schemaConfig{}.unexport
	got, err := json.Marshal(configSchema(reflect.TypeFor[schemaConfig]()))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{` +
		`"labels":{"additionalProperties":{"type":"boolean"},"type":"object"},` +
		`"limit":{"type":"integer"},` +
		`"nested":{"additionalProperties":false,"properties":{"On":{"type":"boolean"}},"required":["On"],"type":"object"},` +
		`"ratio":{"type":"number"},` +
		`"raw":{},` +
		`"region":{"type":"string"},` +
		`"root":{"description":"folder to index","type":"string"},` +
		`"tags":{"items":{"type":"string"},"type":"array"},` +
		`"timeout":{"type":"integer"}},` +
		`"required":["region","root","nested"],"type":"object"}`
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
}

func TestConfigRules(t *testing.T) {
	type cfg struct {
		A string `json:"a,omitempty"`
		B string `json:"b,omitempty"`
	}
	apply := func(context.Context, *Context, cfg) error { return nil }
	got, err := Plugin[cfg]{Name: "p", Apply: apply, ConfigRules: `{"anyOf":[{"required":["a"]},{"required":["b"]}]}`}.schema()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"allOf":[{"anyOf":[{"required":["a"]},{"required":["b"]}]}],` +
		`"properties":{"a":{"type":"string"},"b":{"type":"string"}},"type":"object"}`
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if _, err := (Plugin[cfg]{Name: "p", Apply: apply, ConfigRules: `{nope`}).build(); err == nil || !strings.Contains(err.Error(), "ConfigRules is not valid JSON") {
		t.Errorf("invalid rules: %v", err)
	}
}

func TestDecodeConfig(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		cfg            schemaConfig
	}{
		{name: "empty means {}", in: "  "},
		{name: "fields and embedded fields", in: `{"region":"eu","root":"/srv","nested":{"On":true}}`,
			cfg: schemaConfig{schemaBase: schemaBase{Region: "eu"}, Root: "/srv", Nested: struct{ On bool }{On: true}}},
		{name: "unknown top-level field", in: `{"rooot":"/srv"}`, want: `config: unknown field "rooot"`},
		{name: "unknown nested field", in: `{"nested":{"Off":true}}`, want: `config: unknown field "Off"`},
		{name: "wrong type", in: `{"limit":"ten"}`, want: `config: field "limit": expected int, got a JSON string`},
		{name: "wrong nested type", in: `{"nested":{"On":1}}`, want: `config: field "nested.On": expected bool, got a JSON number`},
		{name: "not an object", in: `[1]`, want: "config: expected sdk.schemaConfig, got a JSON array"},
		{name: "syntax error", in: `{"root":`, want: "config: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := decodeConfig[schemaConfig]([]byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Root != tc.cfg.Root || cfg.Region != tc.cfg.Region || cfg.Nested != tc.cfg.Nested {
					t.Errorf("cfg = %+v, want %+v", cfg, tc.cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
