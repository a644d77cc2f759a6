package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/pipeline"
)

// The MCP server's tool list follows the registry. Two signals wake the
// follow loop: a change to the registry's point (a tool registered or
// removed) and a plugin's state change. The second matters for a reload
// that brings back the same tools: the loop may run only after both the
// removal and the new registration, see no difference, and tell no one, so
// the tools of a plugin whose state changed are announced again (the SDK
// sends tools/list_changed for every AddTool, debounced).

// poke wakes the follow loop; it never blocks, so it is safe inside the
// kernel's callbacks.
func (s *Server) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// touch records that plugin changed state and wakes the follow loop.
func (s *Server) touch(plugin string) {
	s.tmu.Lock()
	s.touched[plugin] = true
	s.tmu.Unlock()
	s.poke()
}

// touchAll records that every plugin with a tool or prompt served changed,
// and wakes the follow loop.
func (s *Server) touchAll() {
	tools := s.h.Tools()
	s.tmu.Lock()
	for _, t := range tools {
		s.touched[t.Owner] = true
	}
	s.tmu.Unlock()
	s.poke()
}

func (s *Server) follow() {
	defer s.wg.Done()
	for {
		select {
		case <-s.base.Done():
			return
		case <-s.changed:
			s.sync()
		}
	}
}

// sync makes the MCP server's tools those of the registry: it removes the
// tools that are gone, adds the new and changed ones, and re-adds those of
// plugins whose state changed since the last sync.
func (s *Server) sync() {
	// Take the touched set before reading the registry: a change after this
	// point wakes the loop again.
	s.tmu.Lock()
	touched := s.touched
	s.touched = map[string]bool{}
	s.tmu.Unlock()

	current := s.h.Tools()
	seen := make(map[string]bool, len(current))
	var add []pipeline.ToolInfo
	for _, t := range current {
		if t.Held != "" || t.Kind != "" {
			// Held absent: listed to people (host tools), never to agents;
			// a call to one is refused by refuseUnknown. An entry of a
			// kind (resources, a prompt) is served as what it is
			// (resources.go, prompts.go), never as a tool.
			continue
		}
		if s.searching() && t.Name == SearchToolName {
			// The host's own search_tools takes the name over MCP.
			if !s.searchTaken {
				s.log.Warn("tool not served over MCP: the host serves search_tools itself (mcp_tool_search)", "tool", t.Name, "plugin", t.Owner)
				s.searchTaken = true
			}
			continue
		}
		seen[t.Name] = true
		old, ok := s.listed[t.Name]
		if !ok || !sameTool(old, t) || touched[t.Owner] {
			add = append(add, t)
		}
	}
	var remove []string
	for name := range s.listed {
		if !seen[name] {
			remove = append(remove, name)
			delete(s.listed, name)
		}
	}
	if len(remove) > 0 {
		s.mcp.RemoveTools(remove...)
	}
	for _, t := range add {
		tool, err := mcpTool(t)
		if err != nil {
			s.log.Warn("tool not served over MCP", "tool", t.Name, "plugin", t.Owner, "error", err)
			if _, ok := s.listed[t.Name]; ok {
				s.mcp.RemoveTools(t.Name)
				delete(s.listed, t.Name)
			}
			continue
		}
		if err := s.addTool(tool); err != nil {
			s.log.Warn("tool not served over MCP", "tool", t.Name, "plugin", t.Owner, "error", err)
			continue
		}
		s.listed[t.Name] = t
	}
	s.noteServed()
	s.syncPrompts(current, touched)
	s.syncLists(current)
	if s.searching() && (len(add) > 0 || len(remove) > 0 || s.index.Load() == nil) {
		s.reindex()
	}
	if len(add) > 0 || len(remove) > 0 {
		s.log.Debug("tools synced", "tools", len(s.listed), "added", len(add), "removed", len(remove))
	}
	s.recheck()
}

// addTool adds one tool; the SDK panics on a schema it cannot take, and
// nothing a plugin registers may panic the host.
func (s *Server) addTool(t *mcp.Tool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rejected by the MCP SDK: %v", p)
		}
	}()
	s.mcp.AddTool(t, s.callTool)
	return nil
}

func sameTool(a, b pipeline.ToolInfo) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters) &&
		a.Destructive == b.Destructive && a.ReadOnly == b.ReadOnly && a.Idempotent == b.Idempotent &&
		a.Timeout == b.Timeout && a.Owner == b.Owner
}

// mcpTool describes a registered tool to MCP clients.
func mcpTool(t pipeline.ToolInfo) (*mcp.Tool, error) {
	schema, err := inputSchema(t.Parameters)
	if err != nil {
		return nil, err
	}
	destructive := t.Destructive
	meta := mcp.Meta{"plugkit/owner": t.Owner}
	if t.Timeout > 0 {
		meta["plugkit/timeout"] = t.Timeout.String()
	}
	return &mcp.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint: t.ReadOnly,
			// Always said: MCP's default for a missing destructiveHint is
			// true, and the registry knows which tools are destructive.
			DestructiveHint: &destructive,
			IdempotentHint:  t.Idempotent,
		},
		Meta: meta,
	}, nil
}

// inputSchema is a tool's parameters as MCP wants them: a JSON Schema for
// an object. A schema without a type gets "type": "object" (MCP arguments
// are always an object, and the pipeline checks them against the tool's own
// schema anyway); a schema for anything but an object cannot be served.
func inputSchema(params json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal(params, &m); err != nil || m == nil {
		return nil, fmt.Errorf("parameters are not a JSON object schema")
	}
	switch typ := m["type"]; typ {
	case "object":
		return params, nil
	case nil:
		m["type"] = "object"
		return json.Marshal(m)
	default:
		return nil, fmt.Errorf("parameters describe %v, not an object, and MCP arguments are always an object", typ)
	}
}
