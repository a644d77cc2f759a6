package main

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"
)

// Config is the plugin's config block. The host checks the block against the
// schema derived from this struct plus configRules, so `host validate`
// reports a bad block at its line before anything starts; check repeats
// what the schema cannot say (a valid duration, glob syntax).
type Config struct {
	Command []string            `json:"command,omitempty" doc:"A stdio server: the program and its arguments. The program is looked up in PATH; a relative path is relative to the deployment file's folder."`
	URL     string              `json:"url,omitempty" doc:"A streamable HTTP server: its MCP endpoint (http or https)."`
	Headers []map[string]string `json:"headers,omitempty" doc:"HTTP headers sent with every request to url, as headers { Name = \"value\" } blocks."`
	Auth    []AuthBlock         `json:"auth,omitempty" doc:"url only: how calls authenticate to the server, one of static, token_exchange, client_credentials or user_consent (see AuthBlock)."`
	Env     map[string]string   `json:"env,omitempty" doc:"The stdio server's environment: only these variables, plus PATH and HOME from the host's."`
	Prefix  *string             `json:"prefix,omitempty" doc:"Registers each tool as PREFIX_name. By default PREFIX is the plugin's name in the deployment; prefix = \"\" registers the server's own names."`
	Timeout string              `json:"timeout,omitempty" doc:"The declared timeout of every bridged tool, a Go duration (\"30s\"); the host's timeout policy enforces it. None by default."`
	Tools   []ToolFilter        `json:"tools,omitempty" doc:"Which of the server's tools to bridge, by the server's own names, and which are read-only."`

	// What the bridge believes of the server (see trust.go).
	TrustHints   bool              `json:"trust_hints,omitempty" doc:"Believe the server's annotations (readOnlyHint, destructiveHint, idempotentHint). By default every bridged tool counts as destructive and open-world unless tools.read_only names it."`
	Descriptions string            `json:"descriptions,omitempty" doc:"What a description that fails a check for injected instructions does: \"flag\" (default: served, flagged in host tools and logged) or \"block\" (held absent with the reason)."`
	Pin          string            `json:"pin,omitempty" doc:"With pins: \"strict\" (default) holds absent a tool the pins do not know; \"new-ok\" serves it."`
	Pins         map[string]string `json:"pins,omitempty" doc:"The pinned definition of each tool, by the server's name, written by host lock. A tool whose definition differs is held absent. Without pins nothing is checked."`

	// Bounds on what the server can make the bridge do (see limits.go).
	StartTimeout        string `json:"start_timeout,omitempty" doc:"Bounds the whole start (starting the server, initialize and tools/list, however often tried) and every other control request to the server (default \"30s\", the host's start timeout)."`
	MaxTools            int    `json:"max_tools,omitempty" doc:"The most tools the server may list (default 1000); a longer list is refused."`
	MaxSchemaBytes      int    `json:"max_schema_bytes,omitempty" doc:"The largest input or output schema of one tool, in bytes (default 262144); a tool with a larger one is held absent."`
	MaxDescriptionBytes int    `json:"max_description_bytes,omitempty" doc:"The largest description or title of one tool, in bytes (default 16384, as the host's max_description_bytes); a tool with a larger one is held absent, unscanned."`
	MaxAnswerBytes      int    `json:"max_answer_bytes,omitempty" doc:"The largest message the server may send, in bytes (default 16777216); a larger one ends the session."`
	ListChangedInterval string `json:"list_changed_interval,omitempty" doc:"list_changed notifications are coalesced: at most one tools/list per interval (default \"1s\")."`
}

// ToolFilter is a tools block: globs (path.Match syntax) over the server's
// own tool names, before the prefix.
type ToolFilter struct {
	Enabled  []string `json:"enabled,omitempty" doc:"Bridge only the tools that match one of these globs."`
	Disabled []string `json:"disabled,omitempty" doc:"Never bridge the tools that match one of these globs."`
	ReadOnly []string `json:"read_only,omitempty" doc:"The tools that match one of these globs count as read-only and not destructive, whatever the server says."`
}

// AuthBlock is the auth block: exactly one of its blocks. With
// token_exchange or client_credentials the host obtains the token of each
// call (the plugin never sees the caller's own token, nor the client
// secret) and the bridge sends it as Authorization: Bearer on that call's
// request only; a call without one fails.
type AuthBlock struct {
	Static            []map[string]string `json:"static,omitempty" doc:"HTTP headers sent with every request, as headers blocks are: one identity for every caller."`
	TokenExchange     []UpstreamAuth      `json:"token_exchange,omitempty" doc:"RFC 8693: the host exchanges the calling principal's OAuth token (mcp_auth oauth) for one of audience at token_url."`
	ClientCredentials []UpstreamAuth      `json:"client_credentials,omitempty" doc:"The gateway's own identity: the host asks token_url for a client credentials token of audience."`
	UserConsent       []ConsentAuth       `json:"user_consent,omitempty" doc:"Each user consents once in a browser (OAuth authorization code with PKCE, the server's authorization server found from its 401); the host keeps each user's token and sends it with that user's calls."`
}

// ConsentAuth is a user_consent block; the host reads it (packages consent
// and vault) and drops client_secret before the plugin gets its config.
type ConsentAuth struct {
	Scope        string `json:"scope,omitempty" doc:"The scopes asked for, space-separated: the narrowest the tools need. Empty: the server's own scopes_supported."`
	ClientID     string `json:"client_id,omitempty" doc:"The host's client id at the authorization server, registered beforehand. Empty: a client id metadata document the host serves, or dynamic registration where the server offers only that."`
	ClientSecret string `json:"client_secret,omitempty" doc:"The client secret of client_id, for a confidential client; only the host uses it."`
}

// UpstreamAuth is a token_exchange or client_credentials block; the host
// reads it (package tokenexchange) and drops client_secret before the
// plugin gets its config.
type UpstreamAuth struct {
	TokenURL     string `json:"token_url" doc:"The token endpoint (https, or http on loopback)."`
	Audience     string `json:"audience" doc:"The audience the token is asked for: the upstream's identifier."`
	Scope        string `json:"scope,omitempty" doc:"The scopes asked for, space-separated."`
	ClientID     string `json:"client_id" doc:"The gateway's client id at the token endpoint."`
	ClientSecret string `json:"client_secret,omitempty" doc:"The gateway's client secret; only the host uses it."`
}

// configRules is what the struct cannot say: exactly one of command and url,
// headers only with url, env only with command.
const configRules = `{
  "anyOf": [{"required": ["command"]}, {"required": ["url"]}],
  "dependentSchemas": {
    "command": {"properties": {"url": false, "headers": false, "auth": false}},
    "url": {"properties": {"env": false}}
  },
  "properties": {
    "command": {"minItems": 1, "items": {"minLength": 1}},
    "url": {"pattern": "^https?://[^/]"},
    "prefix": {"pattern": "^([A-Za-z0-9][A-Za-z0-9_.-]*)?$"},
    "timeout": {"pattern": "^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$"},
    "start_timeout": {"pattern": "^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$"},
    "list_changed_interval": {"pattern": "^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$"},
    "descriptions": {"enum": ["flag", "block"]},
    "pin": {"enum": ["strict", "new-ok"]},
    "max_tools": {"minimum": 1},
    "max_schema_bytes": {"minimum": 1},
    "max_description_bytes": {"minimum": 1},
    "max_answer_bytes": {"minimum": 1024}
  }
}`

// settings is a checked Config.
type settings struct {
	command []string
	url     string
	headers map[string]string
	// perCall: each call's request carries the token the host sent with
	// the call (token_exchange, client_credentials); a call without one
	// fails.
	perCall bool
	env     map[string]string
	// prefix is the block's; ownerPrefix (no prefix set) has the host put
	// the plugin's name in front instead.
	prefix      string
	ownerPrefix bool
	timeout     time.Duration
	enabled     []string
	disabled    []string
	trust       trust
	limits      limits
}

// check turns cfg into settings, reporting every problem on one line.
func check(cfg Config) (*settings, error) {
	var errs []string
	s := &settings{command: cfg.Command, url: cfg.URL, env: cfg.Env, headers: map[string]string{}}
	if cfg.Prefix == nil {
		s.ownerPrefix = true
	} else {
		s.prefix = *cfg.Prefix
	}
	switch {
	case len(cfg.Command) == 0 && cfg.URL == "":
		errs = append(errs, "set command (a stdio server) or url (a streamable HTTP server)")
	case len(cfg.Command) > 0 && cfg.URL != "":
		errs = append(errs, "set command or url, not both")
	case len(cfg.Command) > 0:
		if strings.TrimSpace(cfg.Command[0]) == "" {
			errs = append(errs, "command: the program is empty")
		}
		if len(cfg.Headers) > 0 {
			errs = append(errs, "headers apply to url only")
		}
	default:
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("url %q is not an http or https URL", cfg.URL))
		}
		if len(cfg.Env) > 0 {
			errs = append(errs, "env applies to command only (the server at url runs elsewhere)")
		}
	}
	for _, h := range cfg.Headers {
		for k, v := range h {
			s.headers[k] = v
		}
	}
	errs = append(errs, s.auth(cfg)...)
	if cfg.Timeout != "" {
		d, err := time.ParseDuration(cfg.Timeout)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("timeout %q is not a positive duration such as \"30s\"", cfg.Timeout))
		}
		s.timeout = d
	}
	for _, f := range cfg.Tools {
		s.enabled = append(s.enabled, f.Enabled...)
		s.disabled = append(s.disabled, f.Disabled...)
		s.trust.readOnly = append(s.trust.readOnly, f.ReadOnly...)
	}
	errs = append(errs, s.trust.check(cfg)...)
	errs = append(errs, s.limits.check(cfg)...)
	for _, g := range append(append(append([]string(nil), s.enabled...), s.disabled...), s.trust.readOnly...) {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			errs = append(errs, fmt.Sprintf("tools: %q is not a valid glob (path.Match syntax)", g))
		}
	}
	if len(errs) > 0 {
		return nil, errors.New("config: " + strings.Join(errs, "; "))
	}
	return s, nil
}

// bridged reports whether the server's tool name passes the tools blocks.
func (s *settings) bridged(name string) bool {
	if len(s.enabled) > 0 && !matchAny(s.enabled, name) {
		return false
	}
	return !matchAny(s.disabled, name)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// toolName is the name a server tool is registered under.
func (s *settings) toolName(server string) string {
	if s.prefix == "" {
		return server
	}
	return s.prefix + "_" + server
}

// describe names the server in messages: its program or its URL.
func (s *settings) describe() string {
	if s.url != "" {
		return s.url
	}
	return path.Base(s.command[0])
}
