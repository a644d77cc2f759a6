package deployment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The structs below are the file's schema, declared once: gohcl decodes the
// file with them, and checkNames derives the allowed names from them
// (gohcl.ImpliedBodySchema) to reject unknown ones.
//
// Each block struct has:
//   - a "remain" field, so that gohcl leaves unknown names alone: checkNames
//     reports them instead, saying which names are allowed (gohcl would
//     only say "not expected here");
//   - a "body" field, the block's syntax, for the positions of its values;
//   - a "def_range" field, the block's header.
//
// Optional values are pointers so that "not written" (nil: the default) is
// told apart from a written zero value. Durations are strings parsed by
// Parse, which reports a bad one at its position. A plugin's path is
// optional here so that Parse can report a missing one with the plugin's name.

type fileSyntax struct {
	Host      *hostSyntax      `hcl:"host,block"`
	Plugins   []pluginSyntax   `hcl:"plugin,block"`
	Approvals []approvalSyntax `hcl:"approval,block"`
	Console   *consoleSyntax   `hcl:"console,block"`
	Unknown   hcl.Body         `hcl:",remain"`
}

type hostSyntax struct {
	AdminSocket     *string            `hcl:"admin_socket,optional"`
	RunDir          *string            `hcl:"run_dir,optional"`
	AutoMTLS        *bool              `hcl:"auto_mtls,optional"`
	MaxMessageBytes *int               `hcl:"max_message_bytes,optional"`
	MaxResultBytes  *int               `hcl:"max_result_bytes,optional"`
	MaxArgBytes     *int               `hcl:"max_argument_bytes,optional"`
	MaxDescBytes    *int               `hcl:"max_description_bytes,optional"`
	LogLevel        *string            `hcl:"log_level,optional"`
	ApprovalTimeout *string            `hcl:"approval_timeout,optional"`
	ApprovalStore   *string            `hcl:"approval_store,optional"`
	ApprovalLease   *string            `hcl:"approval_lease_ttl,optional"`
	ListenerTimeout *string            `hcl:"listener_timeout,optional"`
	StartTimeout    *string            `hcl:"start_timeout,optional"`
	DrainTimeout    *string            `hcl:"drain_timeout,optional"`
	ShutdownTimeout *string            `hcl:"shutdown_timeout,optional"`
	MetricsPublic   *bool              `hcl:"metrics_public,optional"`
	MCP             *string            `hcl:"mcp,optional"`
	Metrics         *string            `hcl:"metrics,optional"`
	MCPMaxSessions  *int               `hcl:"mcp_max_sessions,optional"`
	MCPMaxPeerConns *int               `hcl:"mcp_max_conns_per_peer,optional"`
	MCPIdleTimeout  *string            `hcl:"mcp_idle_timeout,optional"`
	MCPOrigins      []string           `hcl:"mcp_allowed_origins,optional"`
	MCPStateKey     *string            `hcl:"mcp_state_key,optional"`
	MCPToolSearch   *bool              `hcl:"mcp_tool_search,optional"`
	MCPSearchOver   *int               `hcl:"mcp_tool_search_over,optional"`
	Receipts        *bool              `hcl:"receipts,optional"`
	EgressResolver  *string            `hcl:"egress_resolver,optional"`
	ReceiptsFrom    *string            `hcl:"receipts_from,optional"`
	Policy          *policySyntax      `hcl:"policy,block"`
	Sandbox         *sandboxSyntax     `hcl:"sandbox,block"`
	Tracing         *tracingSyntax     `hcl:"tracing,block"`
	MCPTLS          *mcpTLSSyntax      `hcl:"mcp_tls,block"`
	MCPAuth         *mcpAuthSyntax     `hcl:"mcp_auth,block"`
	UserConsent     *userConsentSyntax `hcl:"user_consent,block"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type tracingSyntax struct {
	Endpoint *string           `hcl:"endpoint,optional"`
	Sample   *float64          `hcl:"sample,optional"`
	Headers  map[string]string `hcl:"headers,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type mcpTLSSyntax struct {
	Cert *string `hcl:"cert,optional"`
	Key  *string `hcl:"key,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type mcpAuthSyntax struct {
	Keys  *string      `hcl:"keys,optional"`
	OAuth *oauthSyntax `hcl:"oauth,block"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type oauthSyntax struct {
	Issuer      *string  `hcl:"issuer,optional"`
	JWKSURL     *string  `hcl:"jwks_url,optional"`
	Audience    *string  `hcl:"audience,optional"`
	Scopes      []string `hcl:"scopes,optional"`
	GroupsClaim *string  `hcl:"groups_claim,optional"`
	Kind        *string  `hcl:"kind,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type policySyntax struct {
	Timeout      *bool               `hcl:"timeout,optional"`
	Concurrency  *int                `hcl:"concurrency,optional"`
	PerTool      *int                `hcl:"per_tool,optional"`
	Retry        *retrySyntax        `hcl:"retry,block"`
	PerPrincipal *perPrincipalSyntax `hcl:"per_principal,block"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type perPrincipalSyntax struct {
	Rate         *float64 `hcl:"rate,optional"`
	Burst        *int     `hcl:"burst,optional"`
	Concurrency  *int     `hcl:"concurrency,optional"`
	Store        *string  `hcl:"store,optional"`
	OnStoreError *string  `hcl:"on_store_error,optional"`
	LeaseTTL     *string  `hcl:"lease_ttl,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type retrySyntax struct {
	Attempts   *int    `hcl:"attempts,optional"`
	Backoff    *string `hcl:"backoff,optional"`
	MaxBackoff *string `hcl:"max_backoff,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type pluginSyntax struct {
	Name      string         `hcl:"name,label"`
	NameRange hcl.Range      `hcl:"name,label_range"`
	Path      *string        `hcl:"path,optional"`
	SHA256    *string        `hcl:"sha256,optional"`
	Inject    *[]string      `hcl:"inject,optional"`
	Critical  bool           `hcl:"critical,optional"`
	Watch     bool           `hcl:"watch,optional"`
	MaxResult *int           `hcl:"max_result_bytes,optional"`
	MaxArgs   *int           `hcl:"max_argument_bytes,optional"`
	Restart   *restartSyntax `hcl:"restart,block"`
	Tools     *toolsSyntax   `hcl:"tools,block"`
	Config    *configSyntax  `hcl:"config,block"`
	Sandbox   *sandboxSyntax `hcl:"sandbox,block"`
	Shadow    []shadowSyntax `hcl:"shadow,block"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type restartSyntax struct {
	Attempts   *int    `hcl:"attempts,optional"`
	Window     *string `hcl:"window,optional"`
	Backoff    *string `hcl:"backoff,optional"`
	MaxBackoff *string `hcl:"max_backoff,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type toolsSyntax struct {
	Enabled  *[]string `hcl:"enabled,optional"`
	Disabled *[]string `hcl:"disabled,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

// configSyntax is free-form: its whole body is converted to JSON.
type configSyntax struct {
	Body     hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

// checkNames reports every attribute and block of body that schemaOf (a
// struct of the schema above) does not declare, naming the allowed ones. It
// also records the position of each known attribute's value in valueNames,
// so that a type error from gohcl can name the attribute.
func checkNames(body hcl.Body, schemaOf any, where string, valueNames map[int]string) hcl.Diagnostics {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	schema, _ := gohcl.ImpliedBodySchema(schemaOf)
	var attrs, blocks []string
	for _, a := range schema.Attributes {
		attrs = append(attrs, a.Name)
	}
	for _, b := range schema.Blocks {
		blocks = append(blocks, b.Type)
	}
	accepts := acceptsSentence(where, attrs, blocks)

	var diags hcl.Diagnostics
	for _, a := range sortedAttributes(sb) {
		switch {
		case slices.Contains(attrs, a.Name):
			valueNames[a.Expr.StartRange().Start.Byte] = a.Name
		case slices.Contains(blocks, a.Name):
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("%s is a block in %s, not an argument: write %s { ... } without the equals sign.", a.Name, where, a.Name),
				Subject:  a.NameRange.Ptr(),
			})
		default:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("An argument named %q is not allowed in %s.%s %s", a.Name, where, didYouMean(a.Name, attrs), accepts),
				Subject:  a.NameRange.Ptr(),
			})
		}
	}
	for _, b := range sb.Blocks {
		switch {
		case slices.Contains(blocks, b.Type):
		case slices.Contains(attrs, b.Type):
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported block type",
				Detail:   fmt.Sprintf("%s is an argument in %s, not a block: write %s = value.", b.Type, where, b.Type),
				Subject:  b.TypeRange.Ptr(),
			})
		default:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported block type",
				Detail:   fmt.Sprintf("A block of type %q is not allowed in %s.%s %s", b.Type, where, didYouMean(b.Type, blocks), accepts),
				Subject:  b.TypeRange.Ptr(),
			})
		}
	}
	return diags
}

// acceptsSentence says what a body accepts: "The plugin block accepts the
// arguments a, b and the blocks c, d."
func acceptsSentence(where string, attrs, blocks []string) string {
	var parts []string
	if len(attrs) > 0 {
		parts = append(parts, plural(len(attrs), "the argument ", "the arguments ")+strings.Join(attrs, ", "))
	}
	if len(blocks) > 0 {
		parts = append(parts, plural(len(blocks), "the block ", "the blocks ")+strings.Join(blocks, ", "))
	}
	if len(parts) == 0 {
		return upperFirst(where) + " accepts nothing."
	}
	return upperFirst(where) + " accepts " + strings.Join(parts, " and ") + "."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// sortedAttributes returns a body's attributes in source order (the body
// keeps them in a map).
func sortedAttributes(b *hclsyntax.Body) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y *hclsyntax.Attribute) int { return x.SrcRange.Start.Byte - y.SrcRange.Start.Byte })
	return out
}

// attribute returns the attribute called name in body, or nil.
func attribute(body hcl.Body, name string) *hclsyntax.Attribute {
	if sb, ok := body.(*hclsyntax.Body); ok {
		return sb.Attributes[name]
	}
	return nil
}

// valueRange is where the value of body's attribute name was written, or
// fallback when it was not.
func valueRange(body hcl.Body, name string, fallback hcl.Range) hcl.Range {
	if a := attribute(body, name); a != nil {
		return a.Expr.Range()
	}
	return fallback
}

// itemRange is where item i of the list attribute name was written: the
// item itself in a literal list, else the whole value.
func itemRange(body hcl.Body, name string, i int, fallback hcl.Range) hcl.Range {
	a := attribute(body, name)
	if a == nil {
		return fallback
	}
	if t, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok && i < len(t.Exprs) {
		return t.Exprs[i].Range()
	}
	return a.Expr.Range()
}

// retype names the attribute in gohcl's type errors, which say only
// "Unsuitable value: a bool is required".
func retype(diags hcl.Diagnostics, valueNames map[int]string) hcl.Diagnostics {
	for i, d := range diags {
		if d.Summary != "Unsuitable value type" || d.Subject == nil {
			continue
		}
		name, ok := valueNames[d.Subject.Start.Byte]
		if !ok {
			continue
		}
		c := *d
		c.Summary = "Incorrect attribute value type"
		c.Detail = fmt.Sprintf("Inappropriate value for attribute %q: %s.", name,
			strings.TrimSuffix(strings.TrimPrefix(d.Detail, "Unsuitable value: "), "."))
		diags[i] = &c
	}
	return diags
}

// didYouMean is ` Did you mean "NAME"?` for the candidate closest to
// name, when one is close enough to be a typo of it, else "".
func didYouMean(name string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	// A typo: a few edits, and fewer than a third of the name's letters.
	if best == "" || bestDist > 2 || bestDist*3 > len(name) {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
