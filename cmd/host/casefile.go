package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/plugkit-go/plugkit/internal/hclbound"
	"github.com/plugkit-go/plugkit/pipeline"
)

// A case file is HCL: one `case "NAME" { ... }` block per case (see
// testCase). Every problem is reported as file:line:col, all at once.

// Outcomes a case may expect: the explain outcomes, and BLOCKED, which
// only a case with execute = true can get (stage 4 runs only then).
var expectable = []string{pipeline.WouldRun, pipeline.WouldDeny, pipeline.WouldAsk, string(pipeline.CodeBlocked), pipeline.BadArgs, pipeline.NoSuchTool, string(pipeline.CodeToolError)}

// maxCaseFileBytes bounds one case file: it is read whole.
const maxCaseFileBytes = 4 << 20

// testCase is one case block.
type testCase struct {
	Name string `hcl:"name,label"`
	// Tool and Arguments are the call; Arguments is an HCL object.
	Tool      string    `hcl:"tool,optional"`
	Arguments cty.Value `hcl:"arguments,optional"`
	// FromAudit and Seq take the call (tool, arguments, principal) from
	// line Seq of an audit log instead (casefile_audit.go).
	FromAudit string `hcl:"from_audit,optional"`
	Seq       int    `hcl:"seq,optional"`
	// As is the principal, KIND:ID, with Attributes; the user running
	// the test when absent.
	As         string   `hcl:"as,optional"`
	Attributes []string `hcl:"attributes,optional"`
	// Expect is one of expectable; DecidedBy, Rule and ReasonContains
	// check who decided and why, when set.
	Expect         string `hcl:"expect"`
	DecidedBy      string `hcl:"decided_by,optional"`
	Rule           string `hcl:"rule,optional"`
	ReasonContains string `hcl:"reason_contains,optional"`
	// Execute makes the call for real in the test host instead of
	// explaining it.
	Execute bool `hcl:"execute,optional"`

	// Set by the parser.
	file      string
	pos       hcl.Range
	args      []byte
	principal *pipeline.Principal
}

var caseFileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "case", LabelNames: []string{"name"}}}}

// caseFileLimits bound a case file before the HCL parser sees it: the
// parser recurses once per level of nesting, and a stack overflow ends the
// process (package hclbound).
var caseFileLimits = hclbound.Limits{What: "test file", MaxBytes: maxCaseFileBytes}

// parseCaseFile reads one case file.
func parseCaseFile(path string) ([]*testCase, hcl.Diagnostics) {
	src, diags := caseFileLimits.ReadFile(path)
	if diags.HasErrors() {
		return nil, diags
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diags
	}
	content, more := f.Body.Content(caseFileSchema)
	diags = append(diags, more...)
	var cases []*testCase
	seen := map[string]hcl.Range{}
	logs := auditCache{}
	for _, b := range content.Blocks {
		c := &testCase{file: path, pos: b.DefRange}
		if d := gohcl.DecodeBody(b.Body, nil, c); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		c.Name = b.Labels[0]
		bad := func(summary, detail string) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("case %q: %s", c.Name, summary), Detail: detail, Subject: b.DefRange.Ptr()})
		}
		if prev, dup := seen[c.Name]; dup {
			bad("a second case has this name", fmt.Sprintf("the first is at line %d", prev.Start.Line))
		}
		seen[c.Name] = b.DefRange
		if strings.TrimSpace(c.Name) == "" {
			bad("the case has no name", `give it a label: case "what it checks" { ... }`)
		}
		if c.Tool == "" && c.FromAudit == "" {
			bad("tool is empty", "name the tool the case calls, or the audit line it takes the call from (from_audit, seq)")
		}
		if !slices.Contains(expectable, c.Expect) {
			bad(fmt.Sprintf("expect = %q is not an outcome", c.Expect), "use one of "+strings.Join(expectable, ", "))
		}
		if c.Expect == "BLOCKED" && !c.Execute {
			bad("BLOCKED needs execute = true", "stage 4, which blocks results, runs only when the call is made")
		}
		if !c.Arguments.IsNull() && c.Arguments != cty.NilVal {
			raw, err := ctyjson.SimpleJSONValue{Value: c.Arguments}.MarshalJSON()
			switch {
			case err != nil:
				bad("arguments cannot be written as JSON", err.Error())
			case !c.Arguments.Type().IsObjectType() && !c.Arguments.Type().IsMapType():
				bad("arguments is not an object", `write arguments = { name = "value" }`)
			default:
				c.args = raw
			}
		}
		if c.As != "" || len(c.Attributes) > 0 {
			p, err := parsePrincipal(c.As, c.Attributes)
			if err != nil {
				bad("as: "+err.Error(), "")
			} else {
				c.principal = &p
			}
		}
		if c.FromAudit != "" {
			if summary, detail := logs.fromAudit(c); summary != "" {
				bad(summary, detail)
			}
		} else if c.Seq != 0 {
			bad("seq without from_audit", "seq names a line of the audit log from_audit names")
		}
		if c.args == nil {
			c.args = []byte("{}")
		}
		cases = append(cases, c)
	}
	if len(content.Blocks) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "the test file has no case", Detail: `add case "NAME" { tool = ..., expect = ... } blocks`, Subject: &hcl.Range{Filename: path}})
	}
	return cases, diags
}
