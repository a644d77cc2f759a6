package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// The fast path must never accept what jsonschema refuses, and should refuse
// only what jsonschema refuses (numbers jsonschema cannot read aside). These
// tests compare the two on schemas of the subset and arbitrary arguments.

// Schemas as tools declare them (plugins/files, plugins/search, the
// conformance suite, the default): all in the subset.
var toolSchemas = []string{
	string(anyObject),
	`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`,
	`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
	`{"type":"object","properties":{"q":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["q"],"additionalProperties":false}`,
	`{"type": "object", "properties": {"path": {"type": "string", "minLength": 1, "default": ".", "description": "The folder."}}, "additionalProperties": false}`,
	`{"type": "object", "properties": {"path": {"type": "string", "minLength": 1, "description": "The file."}, "content": {"type": "string", "description": "Text."}},
	  "required": ["path", "content"], "additionalProperties": false}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","type":"object","properties":{
	  "mode":{"enum":["fast","slow",null]},"n":{"type":["integer","null"],"exclusiveMinimum":0,"exclusiveMaximum":10},
	  "tags":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":2.0},
	  "opts":{"type":"object","additionalProperties":{"type":"boolean"}},"v":{"const":1},"any":true,"no":false},
	  "examples":[{"mode":"fast"}],"$comment":"c"}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":5,"exclusiveMaximum":false}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"list":{"type":"array","items":{"type":"integer"}}}}`,
	`{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"d":{"type":"string","deprecated":true,"readOnly":true}}}`,
	`true`,
	`false`,
	// More properties than a linear search is used for.
	`{"type":"object","properties":{"j":{"type":"string"},"a":{"type":"integer"},"i":{"type":"boolean"},"b":{"type":"number","minimum":0},
	  "h":{"type":"array"},"c":{"type":"string","maxLength":2},"g":{"type":"null"},"d":{"type":"object"},"f":{"enum":[1,"x"]},"e":true},
	  "required":["a","j"],"additionalProperties":false}`,
}

// Schemas outside the subset: valid, but jsonschema alone checks them.
var slowSchemas = []string{
	`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}`,
	`{"$defs":{"a":{"type":"object"}}}`,
	`{"$id":"https://example.com/s","type":"object"}`,
	`{"$anchor":"a","type":"object"}`,
	`{"type":"object","properties":{"p":{"type":"string","pattern":"^a"}}}`,
	`{"type":"object","properties":{"p":{"type":"string","format":"email"}}}`,
	`{"type":"object","properties":{"p":{"oneOf":[{"type":"string"},{"type":"number"}]}}}`,
	`{"type":"object","properties":{"p":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`,
	`{"type":"object","properties":{"p":{"allOf":[{"type":"string"}]}}}`,
	`{"type":"object","properties":{"p":{"not":{"type":"string"}}}}`,
	`{"type":"object","if":{"required":["a"]},"then":{"required":["b"]},"else":{"required":["c"]}}`,
	`{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`,
	`{"type":"object","propertyNames":{"maxLength":3}}`,
	`{"type":"object","dependentRequired":{"a":["b"]}}`,
	`{"type":"object","dependentSchemas":{"a":{"required":["b"]}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","dependencies":{"a":["b"]}}`,
	`{"type":"object","unevaluatedProperties":false}`,
	`{"type":"object","properties":{"l":{"type":"array","unevaluatedItems":false}}}`,
	`{"type":"object","properties":{"n":{"type":"number","multipleOf":2}}}`,
	`{"type":"object","properties":{"l":{"type":"array","uniqueItems":true}}}`,
	`{"type":"object","properties":{"l":{"type":"array","contains":{"type":"string"}}}}`,
	`{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"type":"string"}]}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"l":{"items":[{"type":"string"}],"additionalItems":false}}}`,
	`{"type":"object","minProperties":1}`,
	`{"type":"object","maxProperties":1}`,
	`{"type":"object","properties":{"s":{"type":"string","contentEncoding":"base64"}}}`,
	`{"type":"object","x-custom":1}`,
	`{"type":"object","properties":{"e":{"enum":[[1],{"a":1}]}}}`,
	`{"type":"object","properties":{"c":{"const":{"a":1}}}}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"c":{"const":1}}}`,
	`{"type":"object","properties":{"n":{"maximum":1e9999999}}}`,
	`{"type":"object","properties":{"s":{"maxLength":1e12}}}`,
	`{"type":"object","properties":{"o":{"type":"object","properties":{"deep":{"pattern":"x"}}}}}`,
	`{"type":"object","additionalProperties":{"format":"uri"}}`,
	`{"type":"array","items":{"$ref":"#"}}`,
	`{"type":"object","properties":{"p":{"$schema":"http://json-schema.org/draft-07/schema#"}}}`,
}

func compileForTest(t testing.TB, schema string) *registered {
	t.Helper()
	reg, err := compile(Tool{
		ToolDescriptor: wire.ToolDescriptor{
			Name: "t", Description: "d", Parameters: json.RawMessage(schema),
		},
		Execute: func(context.Context, *Execution) (any, error) { return nil, nil },
	}, "P", DefaultMaxDescriptionBytes)
	if err != nil {
		t.Fatalf("compile %s: %v", schema, err)
	}
	return reg
}

func TestFastSchemaSubset(t *testing.T) {
	for _, s := range toolSchemas {
		if compileForTest(t, s).fast == nil {
			t.Errorf("no fast path for %s", s)
		}
	}
	for _, s := range slowSchemas {
		if compileForTest(t, s).fast != nil {
			t.Errorf("a fast path for %s, which is outside the subset", s)
		}
	}
}

// The fast path's whole point: accepting allocates nothing.
func TestFastSchemaAcceptsWithoutAllocating(t *testing.T) {
	for _, tc := range []struct{ schema, args string }{
		{toolSchemas[1], `{"a":2,"b":3}`},
		{toolSchemas[3], `{"q":"grüße","limit":100}`},
		{toolSchemas[5], `{"path":"notes/todo.txt","content":"x"}`},
		{toolSchemas[6], `{"mode":null,"n":9.0,"tags":["a","b"],"opts":{"x":true},"v":1.0,"any":[{}]}`},
	} {
		reg := compileForTest(t, tc.schema)
		v, err := parseJSON([]byte(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if !reg.fast.accepts(v) {
			t.Fatalf("%s: the fast path refuses %s", tc.schema, tc.args)
		}
		if n := testing.AllocsPerRun(100, func() { reg.fast.accepts(v) }); n != 0 {
			t.Errorf("%s: accepting %s allocates %v times", tc.schema, tc.args, n)
		}
	}
}

// agree checks the fast path against jsonschema on one call's arguments,
// and checkArguments with and without it; it reports whether jsonschema
// accepted them.
func agree(t testing.TB, reg *registered, raw []byte) bool {
	t.Helper()
	v, _, err := parseJSONText(raw)
	if err != nil {
		return false
	}
	fast := reg.fast.accepts(v)
	valid, panicked := validates(reg, v)
	if fast && !valid {
		t.Fatalf("fast path accepts %s against %s; jsonschema refuses (panic %v)", raw, reg.info.Parameters, panicked)
	}
	if !fast && valid && readable(v) {
		t.Fatalf("fast path refuses %s against %s; jsonschema accepts", raw, reg.info.Parameters)
	}
	slow := &registered{info: reg.info, body: reg.body} // no fast path
	slow.schema, _ = reg.fullSchema()
	c1, e1, p1 := checkSafely(reg, raw)
	c2, e2, p2 := checkSafely(slow, raw)
	if c1 != c2 || unordered(e1) != unordered(e2) || p1 != p2 {
		t.Fatalf("%s against %s: with the fast path %q, %v, panic %v; without %q, %v, panic %v",
			raw, reg.info.Parameters, c1, e1, p1, c2, e2, p2)
	}
	return valid
}

// unordered is an error's text with its causes, and the names each lists,
// sorted: jsonschema orders them as Go iterates maps.
func unordered(e *Error) string {
	if e == nil {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(e.Message, "invalid arguments "), "; ")
	for i, p := range parts {
		parts[i] = quotedList.ReplaceAllStringFunc(p, func(list string) string {
			names := strings.Split(list, ", ")
			slices.Sort(names)
			return strings.Join(names, ", ")
		})
	}
	slices.Sort(parts)
	return string(e.Code) + ": " + strings.Join(parts, "; ")
}

var quotedList = regexp.MustCompile(`'[^']*'(, '[^']*')*`)

// validates runs jsonschema, which panics on numbers big.Rat cannot read
// when the schema bounds them (the pipeline contains it as a host error).
func validates(reg *registered, v any) (valid, panicked bool) {
	defer func() {
		if recover() != nil {
			valid, panicked = false, true
		}
	}()
	schema, err := reg.fullSchema()
	if err != nil {
		return false, false
	}
	return schema.Validate(v) == nil, false
}

func checkSafely(reg *registered, raw []byte) (canon string, bad *Error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	canon, bad = checkArguments(reg, raw)
	return canon, bad, false
}

// readable reports whether every number in v is one parseDecimal reads: the
// fast path leaves the others to jsonschema on purpose.
func readable(v any) bool {
	switch v := v.(type) {
	case json.Number:
		_, ok := parseDecimal(string(v))
		return ok
	case []any:
		for _, e := range v {
			if !readable(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range v {
			if !readable(e) {
				return false
			}
		}
	}
	return true
}

// Numbers chosen to sit on, just off and far from one another, written in
// several ways.
var numberPool = []string{
	"0", "-0", "0.0", "0e5", "0.000e-3", "1", "-1", "1.0", "1.00", "10e-1", "0.1e1", "1e0", "1E+0",
	"1.00000000000000000001", "0.99999999999999999999", "-1.00000000000000000001", "2", "3", "-3", "1.5", "-1.5",
	"2.5", "10", "99", "100", "1e2", "100.0", "1E+2", "99.99999999999999999", "100.00000000000000001", "101",
	"1e-7", "0.0000001", "12345678901234567890", "12345678901234567890.5", "9007199254740993",
	"-9007199254740993", "1e400", "-1e400", "1e-400", "5e-324", "1.7976931348623157e308",
	"4", "5", "7.0",
}

// hugeNumbers are at and past what big.Rat reads; it takes a millisecond
// over each, so they are used sparingly.
var hugeNumbers = []string{"1e999999", "-1e-999999", "1.5e999998", "1e1000000", "1e1000001", "-1e1000001", "0e99999999999999999999"}

var stringPool = []string{"", "a", "ab", "abc", "abcd", "é", "éé", "ééé", "😀", "a😀b", "fast", "slow", "\u0000", "\ufffd"}

var namePool = []string{"a", "b", "c", "é", "a/b", ""}

type schemaGen struct {
	r     *rand.Rand
	draft int
}

func (g schemaGen) number() json.Number {
	if g.r.IntN(2000) == 0 {
		return json.Number(hugeNumbers[g.r.IntN(len(hugeNumbers))])
	}
	return json.Number(numberPool[g.r.IntN(len(numberPool))])
}

// bound is a number for a schema: one jsonschema reads (it ignores bounds
// it cannot, and the subset leaves those out).
func (g schemaGen) bound() json.Number {
	for {
		if n := g.number(); readable(n) {
			return n
		}
	}
}

func (g schemaGen) scalar() any {
	switch g.r.IntN(5) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2:
		return stringPool[g.r.IntN(len(stringPool))]
	}
	return g.bound()
}

func (g schemaGen) count() any {
	n := g.r.IntN(5)
	if g.r.IntN(4) == 0 {
		return json.Number(fmt.Sprintf("%d.0", n))
	}
	return n
}

// schema returns a random schema of the subset for g.draft.
func (g schemaGen) schema(depth int) any {
	r := g.r
	if g.draft >= 6 && r.IntN(12) == 0 {
		return r.IntN(3) > 0
	}
	s := map[string]any{}
	types := []string{"null", "boolean", "number", "integer", "string", "array", "object"}
	switch r.IntN(4) {
	case 0:
	case 1:
		var list []any
		for _, i := range r.Perm(len(types))[:1+r.IntN(3)] {
			list = append(list, types[i])
		}
		s["type"] = list
	default:
		s["type"] = types[r.IntN(len(types))]
	}
	if r.IntN(6) == 0 {
		// Drafts 4 to 7 want distinct values, at least one.
		list := []any{}
		for range r.IntN(4) {
			list = append(list, g.scalar())
		}
		if g.draft < 2019 {
			list = []any{g.scalar()}
		}
		s["enum"] = list
	}
	if g.draft >= 6 && r.IntN(10) == 0 {
		s["const"] = g.scalar()
	}
	for _, k := range []string{"minimum", "maximum"} {
		if r.IntN(4) == 0 {
			s[k] = g.bound()
		}
	}
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		if r.IntN(5) == 0 {
			if g.draft == 4 {
				// A boolean that needs its bound.
				if bound := "m" + k[len("exclusiveM"):]; s[bound] != nil {
					s[k] = r.IntN(2) == 0
				}
			} else {
				s[k] = g.bound()
			}
		}
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		if r.IntN(5) == 0 {
			s[k] = g.count()
		}
	}
	if depth > 0 && r.IntN(2) == 0 {
		props := map[string]any{}
		for range r.IntN(4) {
			props[namePool[r.IntN(len(namePool))]] = g.schema(depth - 1)
		}
		s["properties"] = props
	}
	if r.IntN(3) == 0 {
		var req []any
		for _, i := range r.Perm(len(namePool))[:1+r.IntN(3)] {
			req = append(req, namePool[i])
		}
		s["required"] = req
	}
	if depth > 0 && r.IntN(3) == 0 {
		if r.IntN(2) == 0 {
			s["additionalProperties"] = r.IntN(2) == 0
		} else {
			s["additionalProperties"] = g.schema(depth - 1)
		}
	}
	if depth > 0 && r.IntN(3) == 0 {
		s["items"] = g.schema(depth - 1)
	}
	if r.IntN(8) == 0 {
		s["description"] = "d"
		s["default"] = g.scalar()
	}
	return s
}

// instance returns a value meant to come close to s: mostly of a type it
// allows, with its properties, at the edges of its bounds.
func (g schemaGen) instance(s any, depth int) any {
	r := g.r
	m, _ := s.(map[string]any)
	if m == nil || depth <= 0 || r.IntN(8) == 0 {
		return g.anyValue(depth)
	}
	if list, ok := m["enum"].([]any); ok && len(list) > 0 && r.IntN(2) == 0 {
		return list[r.IntN(len(list))]
	}
	if c, ok := m["const"]; ok && r.IntN(2) == 0 {
		return c
	}
	want := ""
	switch t := m["type"].(type) {
	case string:
		want = t
	case []any:
		want = t[r.IntN(len(t))].(string)
	}
	if want == "" {
		switch {
		case m["properties"] != nil || m["required"] != nil || m["additionalProperties"] != nil:
			want = "object"
		case m["items"] != nil:
			want = "array"
		default:
			return g.anyValue(depth)
		}
	}
	switch want {
	case "object":
		obj := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for name, sub := range props {
			if r.IntN(4) > 0 {
				obj[name] = g.instance(sub, depth-1)
			}
		}
		if req, ok := m["required"].([]any); ok {
			for _, name := range req {
				if _, ok := obj[name.(string)]; !ok && r.IntN(6) > 0 {
					obj[name.(string)] = g.instance(props[name.(string)], depth-1)
				}
			}
		}
		if r.IntN(3) == 0 {
			obj[namePool[r.IntN(len(namePool))]] = g.instance(m["additionalProperties"], depth-1)
		}
		return obj
	case "array":
		arr := []any{}
		for range r.IntN(5) {
			arr = append(arr, g.instance(m["items"], depth-1))
		}
		return arr
	case "string":
		return stringPool[r.IntN(len(stringPool))]
	case "number", "integer":
		return g.number()
	case "boolean":
		return r.IntN(2) == 0
	}
	return nil
}

func (g schemaGen) anyValue(depth int) any {
	r := g.r
	n := 5
	if depth > 0 {
		n = 7
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2, 3:
		return g.number()
	case 4:
		return stringPool[r.IntN(len(stringPool))]
	case 5:
		arr := []any{}
		for range r.IntN(3) {
			arr = append(arr, g.anyValue(depth-1))
		}
		return arr
	}
	obj := map[string]any{}
	for range r.IntN(3) {
		obj[namePool[r.IntN(len(namePool))]] = g.anyValue(depth - 1)
	}
	return obj
}

var drafts = map[int]string{
	4: "http://json-schema.org/draft-04/schema#", 6: "http://json-schema.org/draft-06/schema#",
	7: "http://json-schema.org/draft-07/schema#", 2019: "https://json-schema.org/draft/2019-09/schema",
	2020: "https://json-schema.org/draft/2020-12/schema",
}

// generated returns the n-th random schema of the subset, as JSON text.
func generated(r *rand.Rand) string {
	g := schemaGen{r: r, draft: 2020}
	var s any
	switch r.IntN(6) {
	case 0, 1:
		s = g.schema(3)
	default:
		ds := []int{4, 6, 7, 2019, 2020}
		g.draft = ds[r.IntN(len(ds))]
		m := g.schema(3)
		if obj, ok := m.(map[string]any); ok {
			obj["$schema"] = drafts[g.draft]
		}
		s = m
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestFastSchemaAgreesOnGenerated runs many random schemas of the subset
// against random arguments aimed at them.
func TestFastSchemaAgreesOnGenerated(t *testing.T) {
	schemas, instances := 4000, 25
	if testing.Short() {
		schemas = 400
	}
	r := rand.New(rand.NewPCG(1, 2))
	var total, valid, fastSchemas int
	for range schemas {
		text := generated(r)
		reg, err := compile(Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "t", Description: "d", Parameters: json.RawMessage(text),
			},
			Execute: func(context.Context, *Execution) (any, error) { return nil, nil },
		}, "P", DefaultMaxDescriptionBytes)
		if err != nil {
			t.Fatalf("generated an invalid schema %s: %v", text, err)
		}
		if reg.fast == nil {
			t.Fatalf("no fast path for the generated schema %s", text)
		}
		fastSchemas++
		var doc any
		_ = json.Unmarshal([]byte(text), &doc)
		g := schemaGen{r: r}
		for range instances {
			raw, err := json.Marshal(g.instance(doc, 4))
			if err != nil {
				t.Fatal(err)
			}
			total++
			if agree(t, reg, raw) {
				valid++
			}
		}
	}
	t.Logf("%d schemas, %d arguments, %d valid", fastSchemas, total, valid)
	if valid < total/10 || valid > total*9/10 {
		t.Errorf("%d of %d arguments valid: the generator no longer tests both sides", valid, total)
	}
}

// FuzzFastSchema mutates schema and arguments; when the schema compiles
// into the subset, the fast path must agree with jsonschema.
//
//	go test -fuzz FuzzFastSchema -fuzztime 2m ./pipeline/
func FuzzFastSchema(f *testing.F) {
	args := []string{`{}`, `{"a":1,"b":2}`, `{"a":"x"}`, `{"q":"x","limit":100}`, `{"q":"","limit":1.0}`,
		`{"q":"x","limit":100.5}`, `{"path":"é","content":""}`, `{"mode":"fast","n":9.99,"tags":["abcd"]}`,
		`{"n":0}`, `{"n":1e999999}`, `{"n":1e1000001}`, `{"list":[1,2.0,3.5]}`, `[1,"a",null]`, `"x"`, `5`, `null`, `true`,
		`{"v":1,"any":{},"no":1}`, `{"opts":{"x":false,"y":1}}`,
		`{"a":1,"j":"x","b":0.5,"c":"ab","f":"x","e":[],"g":null}`, `{"a":1,"j":"x","c":"abc"}`, `{"a":1,"j":"x","k":1}`}
	for _, s := range toolSchemas {
		for _, a := range args {
			f.Add(s, a)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 40 {
		text := generated(r)
		var doc any
		_ = json.Unmarshal([]byte(text), &doc)
		raw, _ := json.Marshal(schemaGen{r: r}.instance(doc, 4))
		f.Add(text, string(raw))
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		if strings.TrimSpace(schema) == "" {
			return
		}
		reg, err := compile(Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "t", Description: "d", Parameters: json.RawMessage(schema),
			},
			Execute: func(context.Context, *Execution) (any, error) { return nil, nil },
		}, "P", DefaultMaxDescriptionBytes)
		if err != nil || reg.fast == nil {
			return
		}
		agree(t, reg, []byte(args))
	})
}

func TestDecimalAgreesWithBigRat(t *testing.T) {
	all := append(slices.Clone(numberPool), hugeNumbers...)
	rats := map[string]*big.Rat{}
	for _, a := range all {
		rats[a], _ = new(big.Rat).SetString(a)
	}
	for _, a := range all {
		for _, b := range all {
			compareDecimals(t, a, b, rats)
		}
	}
}

func FuzzDecimal(f *testing.F) {
	for i, a := range numberPool {
		f.Add(a, numberPool[(i*7+3)%len(numberPool)])
	}
	for _, a := range hugeNumbers {
		f.Add(a, "1")
	}
	f.Fuzz(func(t *testing.T, a, b string) { compareDecimals(t, a, b, nil) })
}

// compareDecimals checks parseDecimal, cmp and isInteger against big.Rat,
// which jsonschema uses, for JSON numbers a and b (rats has those already
// read, if any).
func compareDecimals(t *testing.T, a, b string, rats map[string]*big.Rat) {
	t.Helper()
	da, okA := parseDecimal(a)
	db, okB := parseDecimal(b)
	if !okA || !okB {
		for _, s := range []string{a, b} {
			if d, ok := parseDecimal(s); !ok && isNumberText(s) && len(s) < 40 && !strings.ContainsAny(s, "eE") {
				t.Fatalf("parseDecimal refuses the plain number %q (%+v)", s, d)
			}
		}
		return
	}
	if !isNumberText(a) || !isNumberText(b) {
		t.Fatalf("parseDecimal reads %q or %q, which are not JSON numbers", a, b)
	}
	rat := func(s string) *big.Rat {
		if r, ok := rats[s]; ok {
			return r
		}
		r, _ := new(big.Rat).SetString(s)
		return r
	}
	ra, rb := rat(a), rat(b)
	if ra == nil || rb == nil {
		t.Fatalf("parseDecimal reads %q and %q; big.Rat does not read both", a, b)
	}
	if got, want := da.cmp(db), ra.Cmp(rb); got != want {
		t.Fatalf("cmp(%s, %s) = %d, big.Rat says %d", a, b, got, want)
	}
	if got, want := da.isInteger(), ra.IsInt(); got != want {
		t.Fatalf("isInteger(%s) = %v, big.Rat says %v", a, got, want)
	}
}

// isNumberText reports whether s is a JSON number and nothing else.
func isNumberText(s string) bool {
	v, err := parseJSON([]byte(s))
	n, ok := v.(json.Number)
	return err == nil && ok && string(n) == s
}
