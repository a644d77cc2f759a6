package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/pipeline"
)

// toolsAs is `host tools --as KIND:ID [--attribute key:value]...`: the
// tools shown to that principal, as its MCP tools/list would hold them.
type toolsAs struct {
	as    string
	attrs []string
	// keys is the deployment's keys file, for --as key:NAME.
	keys func() string
}

// addToolsAsFlags gives the tools command its --as and --attribute flags.
func addToolsAsFlags(root *cobra.Command, e *env) {
	for _, c := range root.Commands() {
		if c.Name() == "tools" {
			e.toolsAs.keys = e.keysFile
			c.Flags().StringVar(&e.toolsAs.as, "as", "", "list only the tools shown to KIND:ID (user:alice, agent:ci) or to API key NAME (key:NAME); default: every tool")
			c.Flags().StringArrayVar(&e.toolsAs.attrs, "attribute", nil, "an attribute of that principal, key:value (group:readers); repeat for more")
		}
	}
}

// list asks the host for the tools: every one, or those shown to --as.
func (t toolsAs) list(ctx context.Context, c *admin.Client) ([]admin.Tool, error) {
	if t.as == "" && len(t.attrs) == 0 {
		return c.Tools(ctx)
	}
	if name, ok := strings.CutPrefix(t.as, "key:"); ok {
		p, err := t.keyPrincipal(name)
		if err != nil {
			return nil, err
		}
		return c.ToolsAs(ctx, p.Kind+":"+p.ID, p.Attributes)
	}
	p, err := parsePrincipal(t.as, t.attrs)
	if err != nil {
		return nil, fail(exitUsage, "tools: --as: %v", err)
	}
	return c.ToolsAs(ctx, p.Kind+":"+p.ID, p.Attributes)
}

// keyPrincipal is the principal of the API key called name in the
// deployment's keys file: who a request presenting it is made for.
func (t toolsAs) keyPrincipal(name string) (pipeline.Principal, error) {
	if len(t.attrs) > 0 {
		return pipeline.Principal{}, fail(exitUsage, "tools: --as key:%s takes the key's own attributes; leave --attribute out", name)
	}
	file := t.keys()
	keys, diags := authn.LoadKeys(file)
	if diags.HasErrors() {
		return pipeline.Principal{}, fail(exitUsage, "tools: --as key:%s: %s", name, diags.Error())
	}
	p, ok := keys.Named(name)
	if !ok {
		return pipeline.Principal{}, fail(exitUsage, "tools: --as key:%s: no key of that name in %s (`host key add` makes one)", name, shortPath(file))
	}
	return p, nil
}

// printVisibility is host validate's line on the visibility question:
// which plugins answer it, and which do not, whose stage-1 listeners and
// guards (if they have any) count as ones that may allow, so that no tool
// is hidden on their account.
func printVisibility(w io.Writer, d *deployment.Deployment) {
	var yes, no []string
	for _, p := range d.Plugins {
		if p.AnswersVisibility {
			yes = append(yes, p.Name)
		} else {
			no = append(no, p.Name)
		}
	}
	if len(no) == 0 {
		fmt.Fprintf(w, "tool visibility: every plugin answers\n")
		return
	}
	fmt.Fprintf(w, "tool visibility: answered by %s; not by %s (their rules, if any, hide no tool)\n", orNoneList(yes), strings.Join(no, ", "))
}

func orNoneList(names []string) string {
	if len(names) == 0 {
		return "no plugin"
	}
	return strings.Join(names, ", ")
}
