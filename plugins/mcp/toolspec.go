package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/toolname"
)

// sameSpec compares what the host knows of a tool.
func sameSpec(a, b sdk.Tool) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Parameters == b.Parameters &&
		a.Destructive == b.Destructive && a.ReadOnly == b.ReadOnly && a.Idempotent == b.Idempotent &&
		a.Timeout == b.Timeout && slices.Equal(a.Notes, b.Notes) && a.Held == b.Held && a.Definition == b.Definition && a.Kind == b.Kind
}

// toolSpec is the pipeline tool for a server tool. Hints follow MCP's
// defaults: a tool without annotations may be destructive, and
// destructiveHint only counts for a tool that is not read-only.
func (b *bridge) toolSpec(t *mcp.Tool) (sdk.Tool, error) {
	params := []byte(`{"type":"object"}`)
	var held []string
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return sdk.Tool{}, fmt.Errorf("inputSchema: %w", err)
		}
		if why := b.set.limits.schemaTooLarge("inputSchema", len(raw)); why != "" {
			held = append(held, why)
			raw = []byte(`{"type":"object"}`)
		}
		params = raw
	}
	if t.OutputSchema != nil {
		raw, _ := json.Marshal(t.OutputSchema)
		if why := b.set.limits.schemaTooLarge("outputSchema", len(raw)); why != "" {
			held = append(held, why)
		}
	}
	full := t // the definition pinned is the server's, whole
	if why, cut := b.set.limits.boundText(t); why != "" {
		held = append(held, why)
		t = cut
	}
	readOnly, destructive, idempotent, notes := b.set.trust.hints(t.Name, t.Annotations)
	flags := scanTool(t)
	for _, f := range flags {
		notes = append(notes, f.String())
	}
	if len(flags) > 0 && b.set.trust.block {
		held = append(held, fmt.Sprintf("description failed the check %s (descriptions = \"block\")", flags[0].rule))
	}
	def := definitionOf(full)
	if why := b.set.trust.pinHeld(t.Name, def); why != "" {
		held = append(held, why)
	}
	desc := t.Description
	if strings.TrimSpace(desc) == "" {
		desc = t.Title
	}
	if strings.TrimSpace(desc) == "" {
		desc = fmt.Sprintf("%s of the MCP server %s", t.Name, b.set.describe())
	}
	name := t.Name
	spec := sdk.Tool{
		Name:        b.set.toolName(name),
		OwnerPrefix: b.set.ownerPrefix,
		Description: desc,
		Parameters:  string(params),
		Destructive: destructive,
		ReadOnly:    readOnly,
		Idempotent:  idempotent,
		Timeout:     b.set.timeout,
		Notes:       notes,
		Definition:  wireDefinition(name, def),
		Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
			defer b.inFlight(call.ID)()
			return b.call(withCallID(ctx, call.ID), name, call.Arguments)
		},
	}
	if err := toolname.Check(spec.Name); err != nil {
		held = append(held, "the name breaks the MCP tool name rule: "+err.Error())
	}
	if len(held) > 0 {
		spec = holdTool(spec, name, strings.Join(held, "; "))
	}
	return spec, nil
}

// holdTool is spec held absent for why: listed with why, never served.
func holdTool(spec sdk.Tool, name, why string) sdk.Tool {
	spec.Held = why
	// A host that does not know Held would serve the tool: refuse here
	// too.
	spec.Execute = func(context.Context, *sdk.Call) (any, error) {
		return nil, fmt.Errorf("tool %s is held absent: %s", name, why)
	}
	return spec
}
