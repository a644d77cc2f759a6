// Command safety is a plugkit policy plugin: it turns rules written in the
// deployment file into guards that deny tool calls, keeps credentials out of
// arguments and results, and can ask before any destructive tool runs. It
// is meant to be marked critical, so that while it is not running every
// call is denied rather than let through unchecked.
//
// Each deny rule becomes one stage-2 guard, registered in file order: a
// guard can only deny, so no rule can let through a call another plugin
// refused, and when several rules deny a call the reason reported is that
// of the first in file order. A rule applies to the tools it names (every
// tool when it names none); within those it denies when an inspected
// argument is under one of its path prefixes or matches one of its regular
// expressions, or outright when it has neither. path_prefix inspects the
// path argument and pattern every argument, unless arguments names the ones
// to inspect; either way every string inside an inspected argument counts,
// nested in objects and arrays too.
//
// The secrets block finds credentials with the rules of gitleaks' default
// configuration (package secrets): private key blocks, AWS, GitHub, GitLab,
// Slack, Google and Stripe credentials, JWTs, and key = value assignments of
// high entropy, in every string of a call's arguments or a tool's result.
//
//   - arguments = "deny" (the default) is a stage-2 guard, registered
//     before the deny rules, so no stage-1 listener can let a credential
//     through; with ask_destructive on, stage 1 denies too, so that nobody is
//     asked about a call the guard will deny. "ask" asks the approver
//     instead; only stage 1 can ask, so it is a stage-1 filter (one question
//     when the tool is destructive as well), and, unlike deny, a stage-1
//     listener registered before it by another plugin could allow the call
//     without asking. "off" checks nothing.
//   - results = "redact" (the default) is a stage-4 filter that replaces
//     each credential in the result's strings, at any depth, with
//     "[redacted: KIND]", every other byte kept as the tool wrote it. "block"
//     makes the result BLOCKED, naming the kinds. A tool error whose message
//     carries a credential is BLOCKED in both (a replacement cannot change
//     an error). "off" checks nothing.
//   - allow lists known fakes and fixtures, as written, that are not to be
//     found.
//
// No reason, question or feedback quotes a credential: they name its kind
// and the argument it is in, and a deny rule's reason or an Ask quoting
// arguments shows the credential's marker instead.
//
// An ask block is written as a deny block is and matches the same calls,
// but asks the approver in stage 1 instead of denying; the first ask rule
// that matches, in file order, asks, before ask_destructive would. Its
// approval attribute names the deployment's approval route the question
// goes to (the host checks the name when it validates the deployment);
// "caller" asks the calling client; without it the host picks the route
// by the tool's name.
//
// ask_destructive adds a stage-1 filter that Asks the current approver
// before every tool whose descriptor says destructive, whoever registered
// the tool and whenever.
//
// Example deployment block:
//
//	plugin "safety" {
//	  path     = "bin/plugins/safety"
//	  inject   = ["tools"]
//	  critical = true
//	  config {
//	    deny "no-secrets" {
//	      tools       = ["read_file", "write_file"] # optional: tool-name globs (path.Match); default every tool
//	      arguments   = ["path"]                    # optional: arguments to inspect; default path for path_prefix, all for pattern
//	      path_prefix = ["secrets/", "/etc"]        # deny when a cleaned argument is under one
//	      pattern     = ["(?i)password"]            # deny when an argument matches a Go regexp
//	      reason      = "secrets are off limits"    # optional
//	    }
//	    deny "no-shell" { tools = ["shell*"] }      # tools only: deny those tools outright
//	    ask "deploys" {                             # a rule as deny's, that asks instead
//	      tools    = ["deploy_*"]
//	      approval = "oncall"                       # optional: the approval route the question goes to
//	    }
//	    ask_destructive = true
//	    secrets {
//	      arguments = "deny"                        # deny | ask | off (default deny)
//	      results   = "redact"                      # redact | block | off (default redact)
//	      allow     = ["AKIAIOSFODNN7EXAMPLE"]      # optional: known fakes, as written
//	    }
//	  }
//	}
package main

import (
	"context"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

const (
	pluginName    = "safety"
	pluginVersion = "0.1.0"
)

// Config is the plugin's config block as the host hands it over: each deny
// block becomes an object of the deny array, its label under "name".
//
// configSchema below describes the same shape; it is declared rather than
// derived so that it can assert what a struct cannot say (regexp syntax,
// glob syntax, non-empty lists, a rule that denies something), which lets
// the host report a bad rule at its line when it validates the deployment.
// TestSchemaMatchesConfig keeps the two in step.
type Config struct {
	Deny           []Rule    `json:"deny,omitempty"`
	Ask            []AskRule `json:"ask,omitempty"`
	AskDestructive bool      `json:"ask_destructive,omitempty"`
	Secrets        []Secrets `json:"secrets,omitempty"`
}

// AskRule is one ask block: a rule written as a deny rule is, whose match
// asks instead of denying, and the approval route the question goes to.
type AskRule struct {
	Rule
	// Approval names the deployment's approval route ("oncall"), or
	// "caller"; empty leaves it to the host (a route whose tools match).
	Approval string `json:"approval,omitempty"`
}

// Secrets is the secrets block (at most one: the host hands every block as
// an array).
type Secrets struct {
	Arguments string   `json:"arguments,omitempty"`
	Results   string   `json:"results,omitempty"`
	Allow     []string `json:"allow,omitempty"`
}

// Rule is one deny block.
type Rule struct {
	Name       string   `json:"name"`
	Tools      []string `json:"tools,omitempty"`
	Arguments  []string `json:"arguments,omitempty"`
	PathPrefix []string `json:"path_prefix,omitempty"`
	Pattern    []string `json:"pattern,omitempty"`
	URLHosts   []string `json:"url_hosts,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Prompts    []string `json:"prompts,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Callers    []string `json:"callers,omitempty"`
	NotCallers []string `json:"not_callers,omitempty"`
	// Mode is "enforce" (or empty) or "shadow"; EnforceFor, with shadow, is
	// the canary (sdk.Guard.Shadow, EnforceFor).
	Mode       string   `json:"mode,omitempty"`
	EnforceFor []string `json:"enforce_for,omitempty"`
}

// globPatternJSON is a regular expression for path.Match's syntax, escaped
// for a JSON string: literal characters, *, ?, backslash escapes, and
// non-empty [classes] of characters and ranges, negated by a leading ^.
// Unescaped it reads
//
//	^(?:[^\\\[]|\\.|\[(?:\^(?:(?:[^\\\]-]|\\.)(?:-(?:[^\\\]-]|\\.))?)+|(?:[^\\\]^-]|\\.)(?:-(?:[^\\\]-]|\\.))?(?:(?:[^\\\]-]|\\.)(?:-(?:[^\\\]-]|\\.))?)*)\])*$
//
// TestGlobPatternAgreesWithPathMatch checks it against path.Match itself.
const globPatternJSON = `^(?:[^\\\\\\[]|\\\\.|\\[(?:\\^(?:(?:[^\\\\\\]-]|\\\\.)(?:-(?:[^\\\\\\]-]|\\\\.))?)+|(?:[^\\\\\\]^-]|\\\\.)(?:-(?:[^\\\\\\]-]|\\\\.))?(?:(?:[^\\\\\\]-]|\\\\.)(?:-(?:[^\\\\\\]-]|\\\\.))?)*)\\])*$`

// configSchema is the JSON Schema of Config (see the note there): the
// ask rules' items are the deny rules' with approval added (askSchema).
var configSchema = askSchema(baseSchema)

// baseSchema is configSchema without the ask rules.
const baseSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "deny": {
      "description": "Deny rules, one block each, applied in file order.",
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["name"],
        "properties": {
          "name": {"type": "string", "minLength": 1, "description": "The block's label; reasons and audits name the rule by it."},
          "tools": {
            "type": "array", "minItems": 1,
            "description": "Tool-name glob patterns (path.Match syntax) the rule applies to; every tool when absent.",
            "items": {"type": "string", "minLength": 1, "pattern": "` + globPatternJSON + `"}
          },
          "arguments": {
            "type": "array", "minItems": 1,
            "description": "The arguments inspected (every string inside each, nested too); path for path_prefix and every argument for pattern and url_hosts when absent.",
            "items": {"type": "string", "minLength": 1}
          },
          "path_prefix": {
            "type": "array", "minItems": 1,
            "description": "Deny when an inspected argument, cleaned (path.Clean), is one of these paths or under it.",
            "items": {"type": "string", "minLength": 1}
          },
          "pattern": {
            "type": "array", "minItems": 1,
            "description": "Deny when an inspected argument, as written or cleaned, matches one of these Go regular expressions.",
            "items": {"type": "string", "format": "regex"}
          },
          "url_hosts": {
            "type": "array",
            "description": "Deny when an inspected argument carries a URL (scheme://host...) whose host is none of these: host names, or *.example.com for any name below example.com; [] denies every URL.",
            "items": {"type": "string", "minLength": 1}
          },
          "resources": {
            "type": "array", "minItems": 1,
            "description": "The rule applies to resource reads whose URI (the server's own) matches one of these patterns (* any characters, / included; ? one), and to no tool call.",
            "items": {"type": "string", "minLength": 1}
          },
          "prompts": {
            "type": "array", "minItems": 1,
            "description": "The rule applies to prompt gets whose prompt (PREFIX_prompts.NAME) matches one of these glob patterns (path.Match syntax), and to no tool call.",
            "items": {"type": "string", "minLength": 1, "pattern": "` + globPatternJSON + `"}
          },
          "reason": {"type": "string", "minLength": 1, "description": "Said to the caller when the rule denies; the rule's name is always given too."},
          "callers": {
            "type": "array", "minItems": 1,
            "description": "The rule applies only to calls made for a principal one of these selectors names: \"*\", KIND:ID (\"user:alice\", \"local:root\") or an attribute (\"group:readers\"); everyone when absent.",
            "items": {"type": "string", "minLength": 1}
          },
          "not_callers": {
            "type": "array", "minItems": 1,
            "description": "The rule does not apply to calls made for a principal one of these selectors names.",
            "items": {"type": "string", "minLength": 1}
          },
          "mode": {
            "enum": ["enforce", "shadow"],
            "description": "enforce (the default) applies the rule; shadow asks it on every call but does not apply its denial, which the host records on the call (the audit line's shadow member, the shadow metric, host explain)."
          },
          "enforce_for": {
            "type": "array", "minItems": 1,
            "description": "With mode = \"shadow\": a canary, the principals these selectors name have the rule enforced.",
            "items": {"type": "string", "minLength": 1}
          }
        },
        "anyOf": [
          {"required": ["tools"]},
          {"required": ["path_prefix"]},
          {"required": ["pattern"]},
          {"required": ["url_hosts"]},
          {"required": ["resources"]},
          {"required": ["prompts"]}
        ],
        "dependentSchemas": {
          "arguments": {"anyOf": [{"required": ["path_prefix"]}, {"required": ["pattern"]}, {"required": ["url_hosts"]}]},
          "enforce_for": {"required": ["mode"], "properties": {"mode": {"const": "shadow"}}}
        }
      }
    },
    "ask_destructive": {
      "type": "boolean",
      "description": "Ask the approver before every call of a tool whose descriptor says destructive."
    },
    "secrets": {
      "description": "Credentials in arguments and results: one block.",
      "type": "array",
      "maxItems": 1,
      "items": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "arguments": {"enum": ["deny", "ask", "off"], "description": "A call whose arguments carry a credential: denied by a guard (deny, the default), asked about in stage 1 (ask), or let through (off)."},
          "results": {"enum": ["redact", "block", "off"], "description": "A result that carries a credential: each credential replaced by [redacted: KIND] (redact, the default), BLOCKED (block), or let through (off)."},
          "allow": {
            "type": "array",
            "description": "Credentials that are not to be found (known fakes, test fixtures), as written.",
            "items": {"type": "string", "minLength": 1}
          }
        }
      }
    }
  }
}`

func newPlugin() sdk.Plugin[Config] {
	return sdk.Plugin[Config]{
		Name:         pluginName,
		Version:      pluginVersion,
		Inject:       []string{"tools"},
		ConfigSchema: configSchema,
		Apply:        apply,
		// Every rule only reads the call: a dry run is answered as a
		// call would be.
		DryRun: true,
		// And the visibility question: a tools-only deny rule that applies
		// to the principal denies every call of its tools; nothing else
		// of the plugin denies every call.
		Visibility: true,
	}
}

// apply compiles every rule before registering anything, so a bad rule
// registers nothing; a failed registration is undone by the host.
func apply(ctx context.Context, p *sdk.Context, cfg Config) error {
	pol, err := compile(cfg)
	if err != nil {
		return err
	}
	for _, g := range pol.guards {
		if _, err := p.AddGuard(ctx, g); err != nil {
			return err
		}
	}
	if pol.ask != nil {
		if _, err := p.OnPreExecute(ctx, *pol.ask); err != nil {
			return err
		}
	}
	if pol.review != nil {
		if _, err := p.OnPostExecute(ctx, *pol.review); err != nil {
			return err
		}
	}
	return nil
}
