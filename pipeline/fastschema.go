package pipeline

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
)

// Stage 0 runs on every call, and jsonschema's Validate costs about ten
// allocations and a microsecond whatever the schema. Most tools declare plain
// schemas (an object of typed, perhaps bounded, properties), so compile also
// turns such a schema into a fastSchema, whose check allocates nothing.
//
// A fastSchema is only an oracle of acceptance: when it accepts, jsonschema
// would have; when it does not, jsonschema decides and words the error, so
// messages do not change. A schema with any keyword outside the subset below
// gets no fastSchema and is checked by jsonschema alone, as before.
// fastschema_test.go checks the two agree.

// fastSchema is a schema of the subset: boolean schemas, and objects of
//
//	type (one or a list), enum and const of scalars,
//	properties, required, additionalProperties (boolean or schema),
//	items (one schema), minItems, maxItems,
//	minLength, maxLength (in code points),
//	minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers, or
//	draft 4's booleans),
//
// with $schema (at the root, one of the drafts jsonschema knows) and the
// annotations title, description, default, examples, $comment, deprecated,
// readOnly and writeOnly ignored.
type fastSchema struct {
	// always and never are the boolean schemas true and false.
	always, never bool
	// types is the set of accepted types; zero accepts any.
	types jsonTypes
	// oneOfEach lists enum and const: the value must equal an element of
	// each list.
	oneOfEach [][]any // of nil, bool, string, decimal
	// needNumber is set when a number must be read: type integer without
	// number, a bound, or a number in an enum or const.
	needNumber bool

	minimum, maximum, exclusiveMinimum, exclusiveMaximum *decimal
	// Counts; -1 when absent.
	minLength, maxLength, minItems, maxItems int

	// properties, sorted by name: a slice weighs a fifth of a map of
	// the few properties a tool has, and is as fast to search.
	properties []fastProperty
	required   []string
	// additional checks properties not in properties; nil accepts them.
	additional *fastSchema
	// items checks every element; nil accepts any.
	items *fastSchema
}

type jsonTypes uint8

const (
	typeNull jsonTypes = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeNames = map[string]jsonTypes{
	"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// compileFast returns doc's fastSchema, or nil when doc is outside the
// subset. doc is the schema as jsonschema.UnmarshalJSON decodes it, and has
// already compiled: keywords are known to be well formed.
func compileFast(doc any) *fastSchema {
	draft := 2020 // jsonschema's default
	if obj, ok := doc.(map[string]any); ok {
		if v, ok := obj["$schema"]; ok {
			s, _ := v.(string)
			if draft = draftOf(s); draft == 0 {
				return nil
			}
		}
	}
	c := fastCompiler{draft: draft}
	return c.schema(doc, true)
}

// draftOf is the draft a $schema value names, as jsonschema reads it, or 0
// for a custom meta-schema (which may switch vocabularies off).
func draftOf(url string) int {
	u, _ := strings.CutSuffix(url, "#")
	if strings.Contains(u, "#") {
		return 0
	}
	if rest, ok := strings.CutPrefix(u, "http://"); ok {
		u = rest
	} else {
		u, _ = strings.CutPrefix(u, "https://")
	}
	switch u {
	case "json-schema.org/schema", "json-schema.org/draft/2020-12/schema":
		return 2020
	case "json-schema.org/draft/2019-09/schema":
		return 2019
	case "json-schema.org/draft-07/schema":
		return 7
	case "json-schema.org/draft-06/schema":
		return 6
	case "json-schema.org/draft-04/schema":
		return 4
	}
	return 0
}

type fastCompiler struct{ draft int }

// schema compiles one schema, or returns nil when it is outside the subset.
func (c fastCompiler) schema(doc any, root bool) *fastSchema {
	switch doc := doc.(type) {
	case bool:
		if doc {
			return &alwaysSchema
		}
		return &neverSchema
	case map[string]any:
		return c.object(doc, root)
	}
	return nil
}

func (c fastCompiler) object(obj map[string]any, root bool) *fastSchema {
	s := &fastSchema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	for k, v := range obj {
		ok := true
		switch k {
		case "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
		case "$schema":
			ok = root // a subschema's own $schema is not followed here
		case "type":
			s.types, ok = typesOf(v)
		case "enum":
			var list []any
			if list, ok = scalars(v); ok {
				s.oneOfEach = append(s.oneOfEach, list)
			}
		case "const":
			// Draft 4 has no const; jsonschema ignores it there.
			var list []any
			if list, ok = scalars([]any{v}); ok && c.draft >= 6 {
				s.oneOfEach = append(s.oneOfEach, list)
			} else {
				ok = false
			}
		case "properties":
			m, isMap := v.(map[string]any)
			ok = isMap
			s.properties = make([]fastProperty, 0, len(m))
			for name, sub := range m {
				p := fastProperty{name, c.schema(sub, false)}
				ok = ok && p.schema != nil
				s.properties = append(s.properties, p)
			}
			slices.SortFunc(s.properties, func(a, b fastProperty) int { return strings.Compare(a.name, b.name) })
		case "required":
			list, isList := v.([]any)
			ok = isList
			for _, e := range list {
				name, isString := e.(string)
				ok = ok && isString
				s.required = append(s.required, name)
			}
		case "additionalProperties":
			s.additional = c.schema(v, false)
			ok = s.additional != nil
		case "items":
			// A list of schemas (before draft 2020) is outside the subset.
			s.items = c.schema(v, false)
			ok = s.items != nil
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			// Read below, together.
		case "minLength":
			s.minLength, ok = count(v)
		case "maxLength":
			s.maxLength, ok = count(v)
		case "minItems":
			s.minItems, ok = count(v)
		case "maxItems":
			s.maxItems, ok = count(v)
		default:
			ok = false
		}
		if !ok {
			return nil
		}
	}
	var ok bool
	if s.minimum, s.exclusiveMinimum, ok = bounds(obj, "minimum", "exclusiveMinimum"); !ok {
		return nil
	}
	if s.maximum, s.exclusiveMaximum, ok = bounds(obj, "maximum", "exclusiveMaximum"); !ok {
		return nil
	}
	s.needNumber = s.types&(typeInteger|typeNumber) == typeInteger ||
		s.minimum != nil || s.maximum != nil || s.exclusiveMinimum != nil || s.exclusiveMaximum != nil
	for _, list := range s.oneOfEach {
		for _, e := range list {
			if _, isNumber := e.(decimal); isNumber {
				s.needNumber = true
			}
		}
	}
	if p := plainSchema(s); p != nil {
		return p
	}
	return s
}

// Schemas that many tools share, compiled once: true, false, and a type
// and nothing else (a property's {"type": "string", "description": …}).
// Nothing changes a fastSchema once compiled. A registry of thousands of
// tools keeps one of each rather than one per property, which is most of
// what its fast schemas weigh (and what each GC cycle scans).
var (
	alwaysSchema = fastSchema{always: true, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	neverSchema  = fastSchema{never: true, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	plainSchemas [typeObject << 1]fastSchema
)

func init() {
	for t := range plainSchemas {
		plainSchemas[t] = fastSchema{types: jsonTypes(t), minLength: -1, maxLength: -1, minItems: -1, maxItems: -1,
			needNumber: jsonTypes(t)&(typeInteger|typeNumber) == typeInteger}
	}
}

// plainSchema returns the shared schema equal to s when s sets a type
// (or none) and nothing else; nil otherwise. (object never sets always or
// never, and needNumber then follows from the type alone.)
func plainSchema(s *fastSchema) *fastSchema {
	if s.oneOfEach != nil || s.minimum != nil || s.maximum != nil || s.exclusiveMinimum != nil ||
		s.exclusiveMaximum != nil || s.minLength >= 0 || s.maxLength >= 0 || s.minItems >= 0 ||
		s.maxItems >= 0 || s.properties != nil || s.required != nil || s.additional != nil || s.items != nil {
		return nil
	}
	return &plainSchemas[s.types]
}

// bounds reads an inclusive bound and its exclusive counterpart as
// jsonschema does: a boolean exclusive keyword (draft 4) makes the
// inclusive one exclusive.
func bounds(obj map[string]any, inclusive, exclusive string) (in, ex *decimal, ok bool) {
	number := func(v any) (*decimal, bool) {
		n, isNumber := v.(json.Number)
		if !isNumber {
			return nil, false
		}
		d, ok := parseDecimal(string(n))
		return &d, ok
	}
	if v, has := obj[inclusive]; has {
		if in, ok = number(v); !ok {
			return nil, nil, false
		}
	}
	switch v := obj[exclusive].(type) {
	case nil:
		if _, has := obj[exclusive]; has {
			return nil, nil, false
		}
	case bool:
		if v {
			in, ex = nil, in
		}
	default:
		if ex, ok = number(v); !ok {
			return nil, nil, false
		}
	}
	return in, ex, true
}

// typesOf reads type: a name or a non-empty list of names.
func typesOf(v any) (jsonTypes, bool) {
	if name, ok := v.(string); ok {
		t := typeNames[name]
		return t, t != 0
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return 0, false
	}
	var types jsonTypes
	for _, e := range list {
		name, _ := e.(string)
		t := typeNames[name]
		if t == 0 {
			return 0, false
		}
		types |= t
	}
	return types, true
}

// scalars reads an enum of null, booleans, strings and numbers; numbers
// become decimals.
func scalars(v any) ([]any, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]any, 0, len(list))
	for _, e := range list {
		switch e := e.(type) {
		case nil, bool, string:
			out = append(out, e)
		case json.Number:
			d, ok := parseDecimal(string(e))
			if !ok {
				return nil, false
			}
			out = append(out, d)
		default:
			return nil, false
		}
	}
	return out, true
}

// count reads a length or size limit, which may be written 2.0.
func count(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() || r.Sign() < 0 || r.Num().Cmp(big.NewInt(math.MaxInt32)) > 0 {
		return 0, false
	}
	return int(r.Num().Int64()), true
}

type fastProperty struct {
	name   string
	schema *fastSchema
}

// property is the schema of the property name, nil when it has none.
func (s *fastSchema) property(name string) *fastSchema {
	ps := s.properties
	if len(ps) > 8 {
		i, found := slices.BinarySearchFunc(ps, name, func(p fastProperty, name string) int { return strings.Compare(p.name, name) })
		if !found {
			return nil
		}
		return ps[i].schema
	}
	for i := range ps {
		if ps[i].name == name {
			return ps[i].schema
		}
	}
	return nil
}

// accepts reports whether v, as parseJSON produces it, is valid; false may
// also mean "not sure", for jsonschema to decide.
func (s *fastSchema) accepts(v any) bool {
	if s.always || s.never {
		return s.always
	}
	var t jsonTypes
	switch v.(type) {
	case nil:
		t = typeNull
	case bool:
		t = typeBoolean
	case json.Number:
		t = typeNumber
	case string:
		t = typeString
	case []any:
		t = typeArray
	case map[string]any:
		t = typeObject
	default:
		return false
	}
	var num decimal
	if t == typeNumber && s.needNumber {
		var ok bool
		if num, ok = parseDecimal(string(v.(json.Number))); !ok {
			return false
		}
	}
	if s.types != 0 && s.types&t == 0 &&
		!(t == typeNumber && s.types&typeInteger != 0 && num.isInteger()) {
		return false
	}
	for _, list := range s.oneOfEach {
		if !oneOf(v, num, list) {
			return false
		}
	}
	switch v := v.(type) {
	case json.Number:
		return (s.minimum == nil || num.cmp(*s.minimum) >= 0) &&
			(s.maximum == nil || num.cmp(*s.maximum) <= 0) &&
			(s.exclusiveMinimum == nil || num.cmp(*s.exclusiveMinimum) > 0) &&
			(s.exclusiveMaximum == nil || num.cmp(*s.exclusiveMaximum) < 0)
	case string:
		if s.minLength >= 0 || s.maxLength >= 0 {
			n := utf8.RuneCountInString(v)
			return n >= s.minLength && (s.maxLength < 0 || n <= s.maxLength)
		}
	case []any:
		if len(v) < s.minItems || (s.maxItems >= 0 && len(v) > s.maxItems) {
			return false
		}
		if s.items != nil {
			for _, e := range v {
				if !s.items.accepts(e) {
					return false
				}
			}
		}
	case map[string]any:
		for _, name := range s.required {
			if _, ok := v[name]; !ok {
				return false
			}
		}
		for name, e := range v {
			sub := s.property(name)
			if sub == nil {
				sub = s.additional
			}
			if sub != nil && !sub.accepts(e) {
				return false
			}
		}
	}
	return true
}

// oneOf reports whether v (whose number, if it is one, is num) equals an
// element of list.
func oneOf(v any, num decimal, list []any) bool {
	for _, e := range list {
		switch e := e.(type) {
		case nil:
			if v == nil {
				return true
			}
		case bool:
			if b, ok := v.(bool); ok && b == e {
				return true
			}
		case string:
			if s, ok := v.(string); ok && s == e {
				return true
			}
		case decimal:
			if _, ok := v.(json.Number); ok && num.cmp(e) == 0 {
				return true
			}
		}
	}
	return false
}
