package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/go-hclog"
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
	// Prepare, optional, begins the slow part of a start (starting a server
	// the plugin fronts, opening an index) as soon as the host has started
	// the process to run it, with the config the first Apply will get: it
	// then overlaps the start of the deployment's other plugins, whose
	// applies run one after another. It is not called when the host only
	// asks for the declaration (host validate), nor by hosts that predate
	// it. The first Apply runs once Prepare has returned; what Prepare made
	// is the plugin's to hand to Apply (which should check it was made for
	// the config it is given) and to release in Stop if Apply never took
	// it. A failure is Apply's to meet and report: Prepare has no error.
	// ctx ends when the process begins to shut down.
	Prepare func(ctx context.Context, log hclog.Logger, cfg C)
	// Stop runs on a graceful shutdown, after calls in flight finished;
	// optional.
	Stop func(ctx context.Context) error
	// DryRun declares that the plugin's stage-1 listeners and guards
	// understand dry runs (Call.DryRun): given one, they answer without
	// acting. `host explain` and `host test` ask only such plugins; the
	// listeners of any other are reported "not asked".
	DryRun bool
	// Visibility declares that the plugin's stage-1 listeners and guards
	// answer the visibility question (Call.Visibility): given one, a
	// listener denies only when it would deny every call of the tool by
	// the principal, whatever the arguments. The host hides a tool from a
	// principal's lists on that answer; without this declaration it counts
	// the plugin's listeners as ones that may allow.
	Visibility bool
	// Receipts declares the plugin an audit whose Record listeners send
	// receipts. With receipts on, the host takes them only from the
	// plugin the deployment names (receipts_from) or the one critical
	// plugin that declares this; another plugin's receipts are dropped.
	Receipts bool
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
	prepare  func(ctx context.Context, log hclog.Logger, config []byte) // nil unless Plugin.Prepare
	stop     func(ctx context.Context) error
	dryRun   bool
	receipts bool
	visible  bool
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
	var prepare func(ctx context.Context, log hclog.Logger, config []byte)
	if def.Prepare != nil {
		prepare = func(ctx context.Context, log hclog.Logger, config []byte) {
			// A config that does not decode is Apply's to report.
			if cfg, err := decodeConfig[C](config); err == nil {
				def.Prepare(ctx, log, cfg)
			}
		}
	}
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
		prepare:  prepare,
		stop:     def.Stop,
		dryRun:   def.DryRun,
		receipts: def.Receipts,
		visible:  def.Visibility,
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
