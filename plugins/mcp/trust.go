package main

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// A bridged server is not trusted: what it says of its tools (annotations,
// descriptions, the definitions themselves) is checked against what the
// deployment says before a tool is registered. The checks run when a tool
// is registered (start, reload, list_changed), never per call:
//
//   - hints (hints): a tool counts as destructive and open-world unless the
//     block trusts the server's hints or names the tool read-only; what the
//     server claimed stays visible as notes;
//   - descriptions (descriptions.go): text aimed at the model is flagged, or
//     held absent with descriptions = "block";
//   - pins (pins.go): a definition that differs from its pin, or a tool the
//     pins do not know under pin = "strict", is held absent.
//
// A held tool is registered as held (sdk.Tool.Held): the host lists it with
// the reason, keeps its name for this plugin, never serves or calls it.

// trust is the block's policy on what the server says.
type trust struct {
	believe  bool     // trust_hints
	readOnly []string // tools.read_only globs
	block    bool     // descriptions = "block"
	pins     map[string]string
	strict   bool // pin = "strict" (the default)
}

func (t *trust) check(cfg Config) []string {
	var errs []string
	t.believe = cfg.TrustHints
	switch cfg.Descriptions {
	case "", "flag":
	case "block":
		t.block = true
	default:
		errs = append(errs, fmt.Sprintf("descriptions %q is not \"flag\" or \"block\"", cfg.Descriptions))
	}
	switch cfg.Pin {
	case "", "strict":
		t.strict = true
	case "new-ok":
	default:
		errs = append(errs, fmt.Sprintf("pin %q is not \"strict\" or \"new-ok\"", cfg.Pin))
	}
	t.pins = cfg.Pins
	return errs
}

// hints is the deployment's view of a tool's hints, and notes saying what
// the server claimed where it differs. MCP's own defaults apply to a server
// that is trusted: no annotations means destructive, and destructiveHint
// only counts for a tool that is not read-only. An untrusted server's
// claims lower nothing: the tool is destructive, not idempotent, unless
// tools.read_only names it.
func (t *trust) hints(name string, a *mcp.ToolAnnotations) (readOnly, destructive, idempotent bool, notes []string) {
	claimRO, claimDestr, claimIdem, closed := false, true, false, false
	if a != nil {
		claimRO, claimIdem = a.ReadOnlyHint, a.IdempotentHint
		claimDestr = !claimRO && (a.DestructiveHint == nil || *a.DestructiveHint)
		closed = a.OpenWorldHint != nil && !*a.OpenWorldHint
	}
	if t.believe {
		return claimRO, claimDestr, claimIdem, nil
	}
	if matchAny(t.readOnly, name) {
		readOnly, destructive = true, false
	} else {
		destructive = true
	}
	if claimRO && !readOnly {
		notes = append(notes, "server says read-only (not believed: trust_hints is off and tools.read_only does not name it)")
	}
	if !claimDestr && destructive && !claimRO {
		notes = append(notes, "server says not destructive (not believed)")
	}
	if claimIdem {
		notes = append(notes, "server says idempotent (not believed)")
	}
	if closed {
		notes = append(notes, "server says closed-world (not believed)")
	}
	return readOnly, destructive, false, notes
}

// pinned reports whether the block has pins at all (host lock wrote them).
func (t *trust) pinned() bool { return t.pins != nil }

// pinHeld is why a tool with definition pin d is held, "" when it is not.
func (t *trust) pinHeld(name string, d definition) string {
	if !t.pinned() {
		return ""
	}
	want, ok := t.pins[name]
	if !ok {
		if t.strict {
			return "not in the pinned definitions (pin = \"strict\"); `host lock` accepts it"
		}
		return ""
	}
	if changed := d.changedSince(want); len(changed) > 0 {
		return fmt.Sprintf("definition changed since locked: %s; `host lock` accepts it", joinList(changed))
	}
	return ""
}

// logTrust says, when a tool is registered, what the checks found: a WARN
// for a held tool and for a flagged description.
func (b *bridge) logTrust(name string, spec sdk.Tool) {
	if spec.Held != "" {
		b.log.Warn("tool held absent", "tool", name, "reason", spec.Held)
	}
	for _, n := range spec.Notes {
		if strings.HasPrefix(n, "description flagged") {
			b.log.Warn("tool description flagged", "tool", name, "finding", n)
		}
	}
}
