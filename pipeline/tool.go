package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// Tool is what a plugin registers: the contract's descriptor (name,
// description, JSON Schema of its arguments, hints, an optional timeout,
// notes; Owner and OwnerPrefix are ignored: the registrar names the owner)
// and what only the host knows, the argument bound and the body.
type Tool struct {
	wire.ToolDescriptor
	// MaxArgumentBytes bounds the arguments of a call to the tool (its
	// plugin's max_argument_bytes); 0 is Options.MaxArgumentBytes.
	MaxArgumentBytes int
	Execute          ToolFunc
}

// ToolInfo describes a registered tool to listeners and clients: the
// contract's descriptor as the registry holds it (Owner set to the plugin
// that registered the tool, OwnerPrefix never set), and the registration's
// revision. A Kind other than "" (KindResources, KindResource, KindPrompt)
// is an entry that offers a bridged server's resources or a prompt: it is
// called through the same five stages as a tool, and never served as a
// tool. Held, when set, says why the tool is held absent: it is listed (so
// that people see why) and its name stays its owner's, but it is not
// served to clients and a call to it is refused as UNKNOWN_TOOL naming the
// reason.
type ToolInfo struct {
	wire.ToolDescriptor

	// rev is set once at registration (see Revision).
	rev uint64
}

// revisions numbers registrations for ToolInfo.Revision.
var revisions atomic.Uint64

// Revision identifies this registration of the tool for the host's run:
// registering the tool again gives a new one. Zero for a descriptor that
// was not registered (built by hand). A process boundary uses it to send a
// descriptor once and then refer to it.
func (t *ToolInfo) Revision() uint64 { return t.rev }

// Info returns the tool's descriptor as owned by owner.
func (t Tool) Info(owner string) ToolInfo {
	d := t.ToolDescriptor
	d.Owner, d.OwnerPrefix, d.Notes = owner, false, slices.Clone(d.Notes)
	return ToolInfo{ToolDescriptor: d}
}

// clone returns a copy that shares no memory with i, for callers outside
// the pipeline (the registry's descriptors are never changed in place).
func (i ToolInfo) clone() ToolInfo {
	i.Parameters = bytes.Clone(i.Parameters)
	i.Notes = slices.Clone(i.Notes)
	return i
}

var anyObject = json.RawMessage(`{"type":"object"}`)

// registered is a tool as the registry holds it: descriptor, compiled schema
// and body.
type registered struct {
	info ToolInfo
	// full is the schema compiled by jsonschema. A tool whose schema the
	// fast validator takes needs it only for arguments the fast one does
	// not accept (to judge and word them), so it is compiled again then,
	// once, rather than kept from registration: a compiled schema costs
	// about 2 KB a tool, which thousands of bridged tools would hold for
	// nothing.
	fullOnce sync.Once
	schema   *jsonschema.Schema
	fullErr  error
	// fast, when the schema allows, accepts valid arguments without
	// jsonschema (see fastschema.go); nil otherwise.
	fast *fastSchema
	body ToolFunc
	// maxArgs is Tool.MaxArgumentBytes.
	maxArgs int
}

// fullSchema returns the jsonschema form of the tool's schema.
func (r *registered) fullSchema() (*jsonschema.Schema, error) {
	r.fullOnce.Do(func() {
		if r.schema == nil {
			var doc any
			if doc, r.fullErr = jsonschema.UnmarshalJSON(bytes.NewReader(r.info.Parameters)); r.fullErr == nil {
				r.schema, r.fullErr = compileSchema(r.info.Name, doc)
			}
		}
	})
	return r.schema, r.fullErr
}

// compile checks a tool's fields and compiles its schema once, at
// registration, so that no call pays for it. A description longer than
// maxDesc bytes holds the tool absent (see boundDescription).
func compile(t Tool, owner string, maxDesc int) (*registered, error) {
	var missing []error
	if t.Name == "" {
		missing = append(missing, errors.New("name is required"))
	}
	if t.Description == "" {
		missing = append(missing, errors.New("description is required"))
	}
	if t.Execute == nil {
		missing = append(missing, errors.New("execute is required"))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("register tool %q: %w", t.Name, errors.Join(missing...))
	}
	t = boundDescription(t, maxDesc)
	params := t.Parameters
	if len(bytes.TrimSpace(params)) == 0 {
		params = anyObject
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("register tool %q: parameters are not valid JSON: %w", t.Name, err)
	}
	// Compiled now, so that a schema that is not one is refused at
	// registration; kept only when the fast validator cannot stand in.
	schema, err := compileSchema(t.Name, doc)
	if err != nil {
		return nil, err
	}
	fast := compileFast(doc)
	if fast != nil {
		schema = nil
	}
	info := t.Info(owner)
	info.Parameters = append(json.RawMessage(nil), params...)
	info.rev = revisions.Add(1)
	if t.MaxArgumentBytes < 0 {
		return nil, fmt.Errorf("register tool %q: max argument bytes %d is negative", t.Name, t.MaxArgumentBytes)
	}
	return &registered{info: info, schema: schema, fast: fast, body: t.Execute, maxArgs: t.MaxArgumentBytes}, nil
}

// compileSchema compiles a tool's schema with jsonschema.
func compileSchema(name string, doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	// The compiler names the schema by URL; escaped, so that a name with
	// '#', '?' or '%' is not read as a fragment, a query or an escape.
	loc := "tool:" + url.PathEscape(name)
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("register tool %q: parameters: %w", name, err)
	}
	schema, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("register tool %q: parameters are not a valid JSON Schema: %w", name, err)
	}
	return schema, nil
}

// boundDescription holds t absent when its description is longer than max
// bytes: a description is sent to every client in every tools/list and
// read by the model, so one of megabytes costs every session (and may bury
// instructions in bulk). The registry keeps the first max bytes (cut at a
// character's start) so that the tool is listed with why it is held.
func boundDescription(t Tool, max int) Tool {
	if max <= 0 || len(t.Description) <= max {
		return t
	}
	why := fmt.Sprintf("the description is %d bytes, over the max_description_bytes limit of %d", len(t.Description), max)
	cut := max
	for cut > 0 && !utf8.RuneStart(t.Description[cut]) {
		cut--
	}
	t.Description = t.Description[:cut]
	if t.Held == "" {
		t.Held = why
	} else {
		t.Held += "; " + why
	}
	return t
}
