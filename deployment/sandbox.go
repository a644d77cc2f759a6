package deployment

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plugkit-go/plugkit/internal/lineage"
	"github.com/plugkit-go/plugkit/sandbox"
)

// sandboxSyntax is a sandbox block, in the host block (the default) or a
// plugin block (which refines it).
type sandboxSyntax struct {
	Enabled  *bool              `hcl:"enabled,optional"`
	Required *bool              `hcl:"required,optional"`
	Read     *[]string          `hcl:"read,optional"`
	Write    *[]string          `hcl:"write,optional"`
	Exec     *[]string          `hcl:"exec,optional"`
	Network  hcl.Expression     `hcl:"network,optional"`
	Egress   hcl.Expression     `hcl:"egress,optional"`
	Env      *map[string]string `hcl:"env,optional"`
	User     *string            `hcl:"user,optional"`
	Limits   *limitsSyntax      `hcl:"limits,block"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type limitsSyntax struct {
	Memory    *string `hcl:"memory,optional"`
	OpenFiles *int    `hcl:"open_files,optional"`
	Processes *int    `hcl:"processes,optional"`
	CPU       *string `hcl:"cpu,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

// Sandbox is a parsed sandbox block: what it sets (nil: left to the
// default it refines).
type Sandbox struct {
	Enabled  *bool
	Required *bool
	Read     []string // absolute; nil when not written
	Write    []string
	Exec     []string
	Network  *sandbox.Network
	Env      map[string]string
	User     *string
	Limits   sandboxLimits
	// Range is the block's header.
	Range hcl.Range
}

type sandboxLimits struct {
	Memory, OpenFiles, Processes *uint64
	CPU                          *time.Duration
}

// refine returns s with what over sets replacing what s sets.
func (s *Sandbox) refine(over *Sandbox) *Sandbox {
	if s == nil {
		return over
	}
	if over == nil {
		return s
	}
	out := *s
	pick := func(a, b []string) []string {
		if b != nil {
			return b
		}
		return a
	}
	out.Read, out.Write, out.Exec = pick(s.Read, over.Read), pick(s.Write, over.Write), pick(s.Exec, over.Exec)
	if over.Enabled != nil {
		out.Enabled = over.Enabled
	}
	if over.Required != nil {
		out.Required = over.Required
	}
	if over.Network != nil {
		out.Network = over.Network
	}
	if over.User != nil {
		out.User = over.User
	}
	if over.Env != nil {
		out.Env = maps.Clone(s.Env)
		if out.Env == nil {
			out.Env = map[string]string{}
		}
		maps.Copy(out.Env, over.Env)
	}
	l := &out.Limits
	if over.Limits.Memory != nil {
		l.Memory = over.Limits.Memory
	}
	if over.Limits.OpenFiles != nil {
		l.OpenFiles = over.Limits.OpenFiles
	}
	if over.Limits.Processes != nil {
		l.Processes = over.Limits.Processes
	}
	if over.Limits.CPU != nil {
		l.CPU = over.Limits.CPU
	}
	out.Range = over.Range
	return &out
}

// Policy is the sandbox as the launcher applies it; nil when the plugin is
// not sandboxed (no block, or enabled = false).
func (s *Sandbox) Policy() *sandbox.Policy {
	if s == nil || (s.Enabled != nil && !*s.Enabled) {
		return nil
	}
	p := &sandbox.Policy{
		Read:    slices.Clone(s.Read),
		Write:   slices.Clone(s.Write),
		Exec:    slices.Clone(s.Exec),
		Network: sandbox.Network{Mode: sandbox.NetworkNone},
		Env:     maps.Clone(s.Env),
	}
	if s.Network != nil {
		p.Network = *s.Network
	}
	if s.User != nil {
		p.User = *s.User
	}
	if s.Required != nil {
		p.Required = *s.Required
	}
	get := func(v *uint64) uint64 {
		if v == nil {
			return 0
		}
		return *v
	}
	p.Limits = sandbox.Limits{Memory: get(s.Limits.Memory), OpenFiles: get(s.Limits.OpenFiles), Processes: get(s.Limits.Processes)}
	if s.Limits.CPU != nil {
		p.Limits.CPU = *s.Limits.CPU
	}
	return p
}

// sandbox parses a sandbox block.
func (p *parser) sandbox(ss *sandboxSyntax) *Sandbox {
	if ss == nil {
		return nil
	}
	p.names(ss.Body, ss, "the sandbox block")
	body, def := ss.Body, ss.DefRange
	s := &Sandbox{Enabled: ss.Enabled, Required: ss.Required, Range: def}
	paths := func(name string, list *[]string, mustExist bool) []string {
		if list == nil || !p.decoded(body, name) {
			return nil
		}
		out := []string{}
		for i, w := range *list {
			r := itemRange(body, name, i, def)
			if strings.TrimSpace(w) == "" {
				p.errorf(r, "Invalid "+name, "An empty path in %s.", name)
				continue
			}
			abs, shown := p.resolve(w)
			if _, err := os.Stat(abs); err != nil && mustExist {
				p.errorf(r, "Sandbox path not found", "%s (in %s) does not exist: %v.", shown, name, unwrapPathErr(err))
				continue
			}
			out = append(out, abs)
		}
		return out
	}
	s.Read = paths("read", ss.Read, true)
	s.Write = paths("write", ss.Write, false) // a missing folder is made at start
	s.Exec = paths("exec", ss.Exec, true)
	if a := attribute(body, "network"); a != nil {
		s.Network = p.network(a.Expr)
	}
	if a := attribute(body, "egress"); a != nil {
		if net := attribute(body, "network"); net != nil {
			p.errorf(a.Expr.Range(), "Invalid egress", "egress sets the plugin's network (a namespace whose only way out is the host's proxy): leave network out, or write one of them.")
		} else {
			s.Network = p.egress(a.Expr)
		}
	}
	if ss.Env != nil && p.decoded(body, "env") {
		for k := range *ss.Env {
			if !envName.MatchString(k) {
				p.errorf(valueRange(body, "env", def), "Invalid env", "%q is not an environment variable name (letters, digits and '_', not starting with a digit).", k)
			}
		}
		s.Env = *ss.Env
	}
	if ss.User != nil {
		if *ss.User == "" {
			p.errorf(valueRange(body, "user", def), "Invalid user", "user must not be empty; leave it out to run the plugin as the host's user.")
		} else if _, _, err := sandbox.UserIDs(*ss.User); err != nil {
			p.errorf(valueRange(body, "user", def), "Unknown user", "user %q is not a user of this machine.", *ss.User)
		} else {
			s.User = ss.User
		}
	}
	if ls := ss.Limits; ls != nil {
		p.names(ls.Body, ls, "the limits block")
		if ls.Memory != nil && p.decoded(ls.Body, "memory") {
			if n, err := parseBytes(*ls.Memory); err != nil {
				p.errorf(valueRange(ls.Body, "memory", ls.DefRange), "Invalid memory", "memory = %q: %v; write a size such as \"256MiB\" or \"1GiB\".", *ls.Memory, err)
			} else {
				s.Limits.Memory = &n
			}
		}
		positive := func(name string, v *int) *uint64 {
			if v == nil || !p.decoded(ls.Body, name) {
				return nil
			}
			if *v < 1 {
				p.errorf(valueRange(ls.Body, name, ls.DefRange), "Invalid "+name, "%s must be at least 1 (got %d); leave it out for no limit.", name, *v)
				return nil
			}
			n := uint64(*v)
			return &n
		}
		s.Limits.OpenFiles = positive("open_files", ls.OpenFiles)
		s.Limits.Processes = positive("processes", ls.Processes)
		if ls.CPU != nil && p.decoded(ls.Body, "cpu") {
			d := p.duration(ls.Body, "cpu", ls.CPU, 0)
			if d > 0 {
				if d < time.Second {
					p.errorf(valueRange(ls.Body, "cpu", ls.DefRange), "Invalid cpu", "cpu must be at least 1s (the kernel counts CPU time in seconds); got %q.", *ls.CPU)
				} else {
					s.Limits.CPU = &d
				}
			}
		}
	}
	return s
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// network reads network = "none" | "host" | [port, ...].
func (p *parser) network(expr hcl.Expression) *sandbox.Network {
	r := expr.Range()
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		p.diags = append(p.diags, diags...)
		return nil
	}
	bad := func() *sandbox.Network {
		p.errorf(r, "Invalid network", `network must be "none", "host" or a list of TCP ports the plugin may connect to, such as [443, 8080].`)
		return nil
	}
	switch {
	case v.IsNull() || !v.IsKnown():
		return bad()
	case v.Type() == cty.String:
		switch s := v.AsString(); s {
		case "none":
			return &sandbox.Network{Mode: sandbox.NetworkNone}
		case "host":
			return &sandbox.Network{Mode: sandbox.NetworkHost}
		default:
			return bad()
		}
	case v.Type().IsTupleType() || v.Type().IsListType():
		n := &sandbox.Network{Mode: sandbox.NetworkPorts}
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, e := it.Element()
			port, ok := portOf(e)
			if !ok {
				p.errorf(tupleItem(expr, i), "Invalid network port", "Item %d of network is not a TCP port from 1 to 65535. Landlock filters by port, not by address, so write ports only.", i+1)
				continue
			}
			n.Ports = append(n.Ports, port)
		}
		if len(n.Ports) == 0 && i == 0 {
			p.errorf(r, "Invalid network", `An empty port list allows nothing; write network = "none".`)
			return nil
		}
		return n
	}
	return bad()
}

func portOf(v cty.Value) (uint16, bool) {
	if v.IsNull() || !v.IsKnown() {
		return 0, false
	}
	var s string
	switch v.Type() {
	case cty.Number:
		s = v.AsBigFloat().Text('f', -1)
	case cty.String:
		s = v.AsString()
	default:
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, false
	}
	return uint16(n), true
}

func tupleItem(expr hcl.Expression, i int) hcl.Range {
	if exprs, diags := hcl.ExprList(expr); !diags.HasErrors() && i < len(exprs) {
		return exprs[i].Range()
	}
	return expr.Range()
}

var sizeSyntax = regexp.MustCompile(`^\s*([0-9]+)\s*([A-Za-z]*)\s*$`)

var sizeUnits = map[string]uint64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// parseBytes reads a size: a whole number and an optional unit.
func parseBytes(s string) (uint64, error) {
	m := sizeSyntax.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("not a size")
	}
	unit, ok := sizeUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", m[2])
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil || n == 0 || n > (1<<63)/unit {
		return 0, fmt.Errorf("not a size greater than zero")
	}
	return n * unit, nil
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// CheckSandboxes holds every sandboxed plugin up to what the kernel
// supports (support) for a host running as euid: a plugin whose sandbox is
// required but cannot be enforced as declared is an error, any other gap a
// warning, both at the plugin's sandbox block.
func CheckSandboxes(d *Deployment, support sandbox.Support, euid int) hcl.Diagnostics {
	var diags hcl.Diagnostics
	// Plugins with the same gaps (those of the host's default sandbox, as
	// a rule) share one warning, at the first one's block.
	type weaker struct {
		names []string
		r     hcl.Range
	}
	var order []string
	warn := map[string]*weaker{}
	for _, pl := range d.Plugins {
		pol := pl.Sandbox.Policy()
		if pol == nil {
			continue
		}
		diags = append(diags, checkControlPlane(d, pl, pol, euid)...)
		e := pol.Enforcement(support, euid)
		if e.State == sandbox.StateEnforced {
			continue
		}
		var gaps []string
		for _, g := range e.Gaps {
			gaps = append(gaps, g.String())
		}
		r := pl.Range
		if pl.Sandbox.Range.Filename != "" {
			r = pl.Sandbox.Range
		}
		why := strings.Join(gaps, "; ")
		if pol.Required {
			diags = append(diags, errorAt(r, "Sandbox cannot be enforced",
				"Plugin %q requires its sandbox, but this machine cannot enforce all of it: %s.", pl.Name, why))
			continue
		}
		w, ok := warn[why]
		if !ok {
			w = &weaker{r: r}
			warn[why] = w
			order = append(order, why)
		}
		w.names = append(w.names, strconv.Quote(pl.Name))
	}
	for _, why := range order {
		w := warn[why]
		who := "Plugin " + w.names[0] + " runs"
		if len(w.names) > 1 {
			who = "Plugins " + strings.Join(w.names, ", ") + " run"
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Sandbox only partly enforced",
			Detail:   fmt.Sprintf("%s with a weaker sandbox than declared: %s. Add required = true to refuse to start it instead.", who, why),
			Subject:  w.r.Ptr(),
		})
	}
	return diags
}

// Guarded are the host's own folders no sandbox may write, nor a folder
// above them: the admin socket's (the plugin could remove the socket and
// put its own in its place, to read what the CLI sends) and the one where
// hosts record themselves (package lineage: it could hide its host there),
// and the host's keys: the MCP API keys file (it could add a key of its
// own) and the MCP TLS private key. The host checks them again at every
// start of a plugin (remote.Options.Guarded).
func (h Host) Guarded(euid int) []sandbox.Guarded {
	g := []sandbox.Guarded{
		{Path: filepath.Dir(h.AdminSocket), What: "the admin socket's folder"},
		{Path: lineage.RegistryDir(euid), What: "the folder where hosts record themselves"},
	}
	if h.MCPAuth != nil && h.MCPAuth.Keys != "" {
		g = append(g, sandbox.Guarded{Path: h.MCPAuth.Keys, What: "the MCP API keys file"})
	}
	if h.MCPTLS != nil && h.MCPTLS.Key != "" {
		g = append(g, sandbox.Guarded{Path: h.MCPTLS.Key, What: "the MCP TLS private key"})
	}
	return g
}

// checkControlPlane refuses a sandbox that can write one of the host's
// guarded folders or a folder above one.
func checkControlPlane(d *Deployment, pl Plugin, pol *sandbox.Policy, euid int) hcl.Diagnostics {
	var diags hcl.Diagnostics
	r := pl.Range
	if pl.Sandbox.Range.Filename != "" {
		r = pl.Sandbox.Range
	}
	for _, w := range pol.Write {
		for _, g := range d.Host.Guarded(euid) {
			if !sandbox.Within(g.Path, w) {
				continue
			}
			diags = append(diags, errorAt(r, "Sandbox can write the host's control plane",
				"Plugin %q may write %s, which holds %s (%s): it could replace what is there with its own. "+
					"Give the plugin a folder of its own that is not above %s (the sample gives audit run/audit).", pl.Name, w, g.What, g.Path, g.Path))
		}
	}
	return diags
}
