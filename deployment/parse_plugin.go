package deployment

// The plugin blocks: names, binaries and their pins, and each plugin's
// settings.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// pluginName is what a plugin may be called: it names the plugin in logs,
// admin commands and files.
var pluginName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

var hexDigest = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

func (p *parser) plugins(list []pluginSyntax) []Plugin {
	first := map[string]hcl.Range{}
	out := make([]Plugin, 0, len(list))
	for i := range list {
		ps := &list[i]
		pl := p.plugin(ps) // a duplicate too, for its own problems
		if prev, dup := first[ps.Name]; dup {
			p.errorf(ps.NameRange, "Duplicate plugin", "A plugin named %q is already declared at %s; plugin names must be unique.", ps.Name, at(prev))
			continue
		}
		first[ps.Name] = ps.DefRange
		out = append(out, pl)
	}
	return out
}

func (p *parser) plugin(ps *pluginSyntax) Plugin {
	p.names(ps.Body, ps, "the plugin block")
	sb, _ := ps.Body.(*hclsyntax.Body)
	pl := Plugin{
		Name:           ps.Name,
		Critical:       ps.Critical,
		Watch:          ps.Watch,
		Restart:        defaultRestart,
		MaxResultBytes: p.count(ps.Body, "max_result_bytes", ps.MaxResult, 1, p.maxResult),
		// 0 when not written: the host block's, which the pipeline holds.
		MaxArgumentBytes: p.count(ps.Body, "max_argument_bytes", ps.MaxArgs, 1, 0),
		Config:           json.RawMessage("{}"),
		Range:            ps.DefRange,
		ConfigRange:      ps.DefRange,
		configOK:         true,
		src:              &pluginSource{body: sb, config: map[string]hcl.Range{"": ps.DefRange}},
	}
	if !pluginName.MatchString(ps.Name) {
		p.errorf(ps.NameRange, "Invalid plugin name", "Plugin name %q must start with a letter or digit and hold only letters, digits, '_', '.' and '-'.", ps.Name)
	}

	binaryErrs := p.diags.Errs()
	var sum string
	if ps.SHA256 != nil {
		if hexDigest.MatchString(*ps.SHA256) {
			sum = strings.ToLower(*ps.SHA256)
			pl.SHA256 = sum
		} else {
			p.errorf(valueRange(ps.Body, "sha256", ps.DefRange), "Invalid sha256", "sha256 must be 64 hexadecimal digits (a SHA-256 digest); got %d characters.", len(*ps.SHA256))
		}
	}
	switch {
	case ps.Path != nil:
		pl.Path = p.binary(ps.Body, ps.DefRange, *ps.Path, sum)
		pl.Dir = p.absDir()
	case attribute(ps.Body, "path") == nil || p.decoded(ps.Body, "path"): // not written, or null
		p.errorf(ps.DefRange, "Missing path", "Plugin %q has no path; path names the plugin's binary, relative to this file.", ps.Name)
	}
	pl.binaryOK = pl.Path != "" && len(p.diags.Errs()) == len(binaryErrs)

	if ps.Inject != nil && p.decoded(ps.Body, "inject") {
		pl.Inject = p.nameList(ps.Body, "inject", *ps.Inject, ps.DefRange, "service")
	}

	if rs := ps.Restart; rs != nil {
		p.names(rs.Body, rs, "the restart block")
		r := defaultRestart
		r.Attempts = p.count(rs.Body, "attempts", rs.Attempts, 1, r.Attempts)
		r.Window = p.duration(rs.Body, "window", rs.Window, r.Window)
		r.Backoff = p.duration(rs.Body, "backoff", rs.Backoff, r.Backoff)
		r.MaxBackoff = p.duration(rs.Body, "max_backoff", rs.MaxBackoff, r.MaxBackoff)
		p.backoffOrder(rs.Body, rs.DefRange, r.Backoff, r.MaxBackoff)
		pl.Restart = r
	}

	if ts := ps.Tools; ts != nil {
		p.names(ts.Body, ts, "the tools block")
		if ts.Enabled != nil && p.decoded(ts.Body, "enabled") {
			pl.EnabledTools = p.nameList(ts.Body, "enabled", *ts.Enabled, ts.DefRange, "tool")
		}
		if ts.Disabled != nil && p.decoded(ts.Body, "disabled") {
			pl.DisabledTools = p.nameList(ts.Body, "disabled", *ts.Disabled, ts.DefRange, "tool")
			for i, t := range *ts.Disabled {
				if j := slices.Index(pl.EnabledTools, t); j >= 0 && t != "" {
					p.errorf(itemRange(ts.Body, "disabled", i, ts.DefRange), "Tool both enabled and disabled",
						"Tool %q is in enabled (line %d) and in disabled; list it in one of them.", t, itemRange(ts.Body, "enabled", j, ts.DefRange).Start.Line)
				}
			}
		}
	}

	pl.Sandbox = p.defaultSandbox.refine(p.sandbox(ps.Sandbox))
	p.shadows(&pl, ps.Shadow)

	if cs := ps.Config; cs != nil {
		raw, src, diags := configJSON(cs.Body, cs.DefRange)
		p.diags = append(p.diags, diags...)
		pl.configOK = !diags.HasErrors()
		pl.Config, pl.src.config, pl.ConfigRange = raw, src, cs.DefRange
		if pl.configOK {
			p.upstream(&pl)
		}
	}
	return pl
}

// nameList checks a list of names (services, tools): none empty, none twice.
// It returns the list as written.
func (p *parser) nameList(body hcl.Body, attr string, list []string, def hcl.Range, what string) []string {
	for i, n := range list {
		r := itemRange(body, attr, i, def)
		switch {
		case strings.TrimSpace(n) == "":
			p.errorf(r, "Invalid "+attr, "An empty %s name in %s.", what, attr)
		case slices.Index(list, n) < i:
			p.errorf(r, "Duplicate "+what, "%s %q is listed twice in %s.", upperFirst(what), n, attr)
		}
	}
	if list == nil {
		// inject = [] means "nothing", which nil (not written) does not.
		list = []string{}
	}
	return list
}

// binary checks a plugin's binary: it exists, is an executable file, and
// matches sum (a valid lower-case digest) unless sum is empty. It returns
// the absolute path.
func (p *parser) binary(body hcl.Body, def hcl.Range, written, sum string) string {
	pathRange := valueRange(body, "path", def)
	if written == "" {
		p.errorf(pathRange, "Invalid path", "path must not be empty: it names the plugin's binary, relative to this file.")
		return ""
	}
	abs, shown := p.resolve(written)
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.errorf(pathRange, "Plugin binary not found", "%s does not exist.", shown)
		return abs
	case err != nil:
		p.errorf(pathRange, "Plugin binary unreadable", "%v.", err)
		return abs
	case info.IsDir():
		p.errorf(pathRange, "Plugin binary is a folder", "%s is a folder, not an executable file.", shown)
		return abs
	case info.Mode().Perm()&0o111 == 0:
		p.errorf(pathRange, "Plugin binary not executable", "%s is not executable (mode %s); chmod +x it.", shown, info.Mode().Perm())
		return abs
	}
	if sum == "" {
		return abs
	}
	actual, err := fileSHA256(abs)
	if err != nil {
		p.errorf(pathRange, "Plugin binary unreadable", "%v.", err)
		return abs
	}
	if actual != sum {
		p.errorf(valueRange(body, "sha256", def), "Checksum mismatch", "sha256 pins %s, but %s has SHA-256 %s.", sum, shown, actual)
	}
	return abs
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
