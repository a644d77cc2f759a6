package sdk

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// configSchema derives the JSON Schema of a configuration type from the same
// struct the configuration is decoded into, so the two can never disagree.
//
// The mapping follows encoding/json: field names from `json` tags ("-"
// skips), embedded structs flattened. A field is required unless it has
// `omitempty` or is a pointer. A `doc:"..."` tag becomes the description.
// Objects refuse unknown properties, as the strict decoder does. Types with
// their own JSON encoding (json.Unmarshaler, encoding.TextUnmarshaler) get
// the empty schema, which accepts anything.
func configSchema(t reflect.Type) map[string]any {
	return schemaFor(t, map[reflect.Type]bool{})
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func schemaFor(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	if t.Kind() == reflect.Pointer {
		return schemaFor(t.Elem(), seen)
	}
	switch pt := reflect.PointerTo(t); {
	case pt.Implements(jsonUnmarshaler):
		return map[string]any{}
	case pt.Implements(textUnmarshaler):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": schemaFor(t.Elem(), seen)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaFor(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] {
			return map[string]any{} // a recursive type: stop, accept anything below
		}
		seen[t] = true
		defer delete(seen, t)
		props := map[string]any{}
		required := []string{}
		structFields(t, seen, props, &required)
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	return map[string]any{} // interfaces and anything else: accept any JSON value
}

func structFields(t reflect.Type, seen map[reflect.Type]bool, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				structFields(et, seen, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := schemaFor(f.Type, seen)
		if doc := f.Tag.Get("doc"); doc != "" {
			s["description"] = doc
		}
		props[name] = s
		if !hasOption(opts, "omitempty") && !hasOption(opts, "omitzero") && f.Type.Kind() != reflect.Pointer {
			*required = append(*required, name)
		}
	}
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}
