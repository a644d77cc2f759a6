package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A pin is one line per tool in the block's pins map, written by host lock:
//
//	"title=… description=… inputSchema=… outputSchema=… annotations=…"
//
// each the first 16 bytes (32 hex digits) of the SHA-256 of that part of the
// tool's definition as canonical JSON (object keys sorted). One digest per
// part lets a refusal say what changed ("description, inputSchema") without
// keeping the text; 128 bits per part leave no room for a second preimage.
// The name is the pins map's key.

// pinParts are the parts of a definition, in pin order.
var pinParts = []string{"title", "description", "inputSchema", "outputSchema", "annotations"}

// definition is a tool's pin as its server gives it now.
type definition map[string]string

func definitionOf(t *mcp.Tool) definition {
	d := definition{}
	parts := map[string]any{
		"title": t.Title, "description": t.Description,
		"inputSchema": t.InputSchema, "outputSchema": t.OutputSchema,
		"annotations": t.Annotations,
	}
	for _, p := range pinParts {
		d[p] = digest(parts[p])
	}
	return d
}

// digest is the part's canonical JSON digest. encoding/json sorts map keys;
// a schema decoded from the wire is maps and slices, so the same schema
// always encodes the same.
func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("unencodable")
	}
	// Re-decode so that a json.RawMessage (key order as the server sent
	// it) is canonical too.
	var canon any
	if json.Unmarshal(b, &canon) == nil {
		if c, err := json.Marshal(canon); err == nil {
			b = c
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// promptParts are the parts of a prompt's definition, in pin order:
// messages is the text of a prompt that takes no argument ("null" for
// one that does, whose text depends on them).
var promptParts = []string{"title", "description", "arguments", "messages"}

func promptDefinition(p *mcp.Prompt, messages any) definition {
	d := definition{}
	parts := map[string]any{"title": p.Title, "description": p.Description, "arguments": p.Arguments, "messages": messages}
	for _, k := range promptParts {
		d[k] = digest(parts[k])
	}
	return d
}

// parts are the parts d has, in pin order.
func (d definition) parts() []string {
	if _, ok := d["arguments"]; ok {
		return promptParts
	}
	if _, ok := d["mimeType"]; ok {
		return resourceParts
	}
	return pinParts
}

// String is the pin as host lock writes it.
func (d definition) String() string {
	parts := make([]string, 0, len(pinParts))
	for _, p := range d.parts() {
		parts = append(parts, p+"="+d[p])
	}
	return strings.Join(parts, " ")
}

// parsePin reads a written pin; an unreadable one has no parts, so every
// part counts as changed.
func parsePin(s string) definition {
	d := definition{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			d[k] = v
		}
	}
	return d
}

// changedSince lists the parts that differ from pin.
func (d definition) changedSince(pin string) []string {
	old := parsePin(pin)
	var changed []string
	for _, p := range d.parts() {
		if old[p] != d[p] {
			changed = append(changed, p)
		}
	}
	return changed
}

// wireDefinition is the descriptor's Definition field: "tool=NAME " and the
// pin, so that host lock, which sees the registered (prefixed) name, knows
// the server's name to key the pin by.
func wireDefinition(server string, d definition) string {
	return "tool=" + server + " " + d.String()
}

func joinList(s []string) string { return strings.Join(s, ", ") }
