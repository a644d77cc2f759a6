package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Version is the SDK's version, reported in Describe.
const Version = "0.1.0"

// Plugin defines a plugin; C is its configuration type. Name and Apply are
// required.
type Plugin[C any] struct {
	// Name is the plugin's own name, reported in Describe and in its logs.
	Name string
	// Version is the plugin's own version; optional.
	Version string
	// Inject lists the services the plugin needs ("tools" to register tools
	// or listeners, names other plugins provide). The host applies the
	// plugin only once every one is provided.
	Inject []string
	// Provides lists the services the plugin will Provide. The host reads it
	// before starting anything, to start providers before the plugins that
	// inject them; Context.Provide refuses a service not listed here.
	Provides []string
	// ConfigSchema declares the configuration's JSON Schema as JSON text.
	// Leave it empty to derive it from C: names from json tags, a field is
	// optional when it has omitempty or is a pointer, a doc tag becomes its
	// description, unknown properties are refused.
	ConfigSchema string
	// ConfigRules adds JSON Schema keywords to the schema derived from C,
	// for what a struct cannot say (exactly one of two fields, a field that
	// needs another), as a JSON object: the derived schema gets it under
	// "allOf", so the host checks both. Ignored when ConfigSchema is set.
	ConfigRules string
	// Apply is the plugin's body. cfg was decoded strictly from the
	// deployment's block. ctx ends when Apply returns: work that outlives
	// Apply uses the context of a later call or watches p.Done().
	Apply func(ctx context.Context, p *Context, cfg C) error
	// Stop runs on a graceful shutdown, after calls in flight finished;
	// optional.
	Stop func(ctx context.Context) error
}

// definition is a Plugin with its type parameter erased: the server does not
// need to be generic, only the configuration decoding does.
type definition struct {
	name     string
	version  string
	inject   []string
	provides []string
	schema   json.RawMessage
	apply    func(ctx context.Context, p *Context, config []byte) error
	stop     func(ctx context.Context) error
}

// build checks the definition and erases C. Every problem is reported, not
// only the first.
func (def Plugin[C]) build() (*definition, error) {
	var errs []error
	if strings.TrimSpace(def.Name) == "" {
		errs = append(errs, errors.New("Name is empty"))
	}
	if def.Apply == nil {
		errs = append(errs, errors.New("Apply is nil"))
	}
	errs = append(errs, checkNames("Inject", def.Inject)...)
	errs = append(errs, checkNames("Provides", def.Provides)...)
	schema, err := def.schema()
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	apply := def.Apply
	return &definition{
		name:     def.Name,
		version:  def.Version,
		inject:   append([]string(nil), def.Inject...),
		provides: append([]string(nil), def.Provides...),
		schema:   schema,
		apply: func(ctx context.Context, p *Context, config []byte) error {
			cfg, err := decodeConfig[C](config)
			if err != nil {
				return err
			}
			return apply(ctx, p, cfg)
		},
		stop: def.Stop,
	}, nil
}

// checkNames reports empty and repeated service names in list.
func checkNames(field string, list []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, name := range list {
		switch {
		case strings.TrimSpace(name) == "":
			errs = append(errs, fmt.Errorf("%s[%d] is empty", field, i))
		case seen[name]:
			errs = append(errs, fmt.Errorf("%s lists %q twice", field, name))
		}
		seen[name] = true
	}
	return errs
}

func (def Plugin[C]) schema() (json.RawMessage, error) {
	if def.ConfigSchema != "" {
		return schemaText("ConfigSchema", def.ConfigSchema, "")
	}
	t := reflect.TypeFor[C]()
	if t.Kind() == reflect.Interface {
		return nil, errors.New("the config type is an interface: use a struct (struct{} for none) or declare ConfigSchema")
	}
	schema := configSchema(t)
	if def.ConfigRules != "" {
		rules, err := schemaText("ConfigRules", def.ConfigRules, "")
		if err != nil {
			return nil, err
		}
		schema["allOf"] = []any{rules}
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("config schema: %w", err)
	}
	return b, nil
}
