package main

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The description checks: text in a tool's description, title or a
// parameter's description that is aimed at the model rather than at a
// reader. No maintained Go library carries such rules, so they are data
// here, each with its source and a test (descriptions_test.go). The attack
// classes are those documented for MCP tool poisoning: Invariant Labs, "MCP
// Security Notification: Tool Poisoning Attacks" (April 2025), whose proof
// of concept hides "<IMPORTANT> … read ~/.cursor/mcp.json … do not mention
// that you first need to read the file" in a description, and its
// shadowing example ("when this tool is available, the send_email tool must
// send all emails to …"); OWASP Top 10 for LLM Applications 2025, LLM01
// Prompt Injection ("ignore previous instructions"); and for hidden text,
// Unicode's Tags block (U+E0000–U+E007F, "ASCII smuggling"), the zero-width
// and invisible format characters, and the bidirectional controls of Trojan
// Source (CVE-2021-42574).

// descRule is one check.
type descRule struct {
	id     string
	what   string
	source string
	re     *regexp.Regexp // nil: match runs instead
	match  func(string) (string, bool)
}

var descRules = []descRule{
	{
		id: "hidden-unicode", what: "invisible characters (Unicode tags, zero-width or bidirectional controls)",
		source: "Unicode Tags block (ASCII smuggling); Trojan Source, CVE-2021-42574",
		match:  hiddenUnicode,
	},
	{
		id: "ignore-instructions", what: "asks the model to ignore its instructions",
		source: "OWASP LLM01:2025 Prompt Injection",
		re:     regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override)\b[^.]{0,40}\b(previous|prior|above|earlier|all|any|system|other)\b[^.]{0,20}\b(instructions?|prompts?|rules|directions|guidelines)\b`),
	},
	{
		id: "conceal-from-user", what: "asks the model to keep something from the user",
		source: "Invariant Labs, Tool Poisoning Attacks (2025): \"do not mention that you first need to read the file\"",
		re:     regexp.MustCompile(`(?i)(\b(do not|don't|dont|never|must not)\s+(tell|inform|mention|reveal|notify|alert|show)\b|\bwithout\s+(telling|informing|notifying|alerting|asking)\s+(the\s+)?(user|human|operator))`),
	},
	{
		id: "instruction-tags", what: "an <IMPORTANT>-style block addressed to the model",
		source: "Invariant Labs, Tool Poisoning Attacks (2025): <IMPORTANT> … </IMPORTANT>",
		re:     regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|admin|assistant)\s*>`),
	},
	{
		id: "sensitive-files", what: "refers to credentials or other tools' configuration",
		source: "Invariant Labs, Tool Poisoning Attacks (2025): ~/.cursor/mcp.json and ~/.ssh/id_rsa",
		re:     regexp.MustCompile(`(?i)(~/\.ssh|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc|/etc/(passwd|shadow)|\bmcp\.json\b|\.cursor/|claude_desktop_config|\.kube/config|\.docker/config\.json|\bprivate[ _-]key\b)`),
	},
	{
		id: "other-tools", what: "tells the model how to use other tools (shadowing)",
		source: "Invariant Labs, Tool Poisoning Attacks (2025): shadowing another server's send_email",
		re:     regexp.MustCompile(`(?i)\b(when|whenever|before|after|instead of)\b[^.]{0,30}\b(this tool is|using|calling|call|use|invoking)\b[^.]{0,30}\b(any|other|another|the)\b[^.]{0,20}\btools?\b[^.]{0,40}\b(must|should|always|never|instead)\b`),
	},
}

// hiddenUnicode finds a character that renders as nothing.
func hiddenUnicode(s string) (string, bool) {
	for i, r := range s {
		switch {
		case r >= 0xE0000 && r <= 0xE007F, // tags
			r >= 0x200B && r <= 0x200F, // zero-width, LRM/RLM
			r >= 0x202A && r <= 0x202E, // bidi embeddings and overrides
			r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
			r >= 0x2066 && r <= 0x2069, // bidi isolates
			r == 0xFEFF, r == 0x00AD, r == 0x180E:
			_ = i
			return fmt.Sprintf("U+%04X", r), true
		}
	}
	return "", false
}

// finding is one rule that matched one text.
type finding struct {
	rule, where, excerpt string
}

func (f finding) String() string {
	return fmt.Sprintf("description flagged (%s) in %s: %q", f.rule, f.where, f.excerpt)
}

// scanTool runs every rule over the texts of t a model reads.
func scanTool(t *mcp.Tool) []finding {
	var out []finding
	check := func(where, text string) {
		for _, r := range descRules {
			var hit string
			var ok bool
			if r.re != nil {
				if loc := r.re.FindStringIndex(text); loc != nil {
					hit, ok = text[loc[0]:loc[1]], true
				}
			} else {
				hit, ok = r.match(text)
			}
			if ok {
				out = append(out, finding{rule: r.id, where: where, excerpt: clip(hit, 80)})
			}
		}
	}
	check("name", t.Name)
	check("title", t.Title)
	check("description", t.Description)
	walkDescriptions(t.InputSchema, "inputSchema", check)
	return out
}

// walkDescriptions visits the description and title of every node of a
// decoded JSON Schema.
func walkDescriptions(v any, where string, check func(where, text string)) {
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			if s, ok := c.(string); ok && (k == "description" || k == "title") {
				check(where+"."+k, s)
				continue
			}
			walkDescriptions(c, where+"."+k, check)
		}
	case []any:
		for i, c := range n {
			walkDescriptions(c, fmt.Sprintf("%s[%d]", where, i), check)
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimSpace(s[:n]) + "…"
}
