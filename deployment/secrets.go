package deployment

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// secretFileKeyword is the SDK's mark of a config value naming a file only
// its plugin may read (sdk.SecretFileKeyword; not imported: the deployment
// reads schemas, not the SDK).
const secretFileKeyword = "x-plugkit-secret-file"

// secretFileWarnings warns, for each file a plugin's config names as its
// secret (a signing key), about every other plugin that could read it: one
// without a sandbox, or one whose sandbox reads, writes or executes a folder
// holding it. A plugin that can read the audit's key can sign a forged log.
func secretFileWarnings(plugins []Plugin, decls []Declaration) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for i, p := range plugins {
		for field, path := range secretFiles(p, decls[i].ConfigSchema) {
			for _, o := range plugins {
				if o.Name == p.Name {
					continue
				}
				why := ""
				if pol := o.Sandbox.Policy(); pol == nil {
					why = "has no sandbox"
				} else {
					for _, allowed := range append(append(append([]string{}, pol.Read...), pol.Write...), pol.Exec...) {
						if path == allowed || strings.HasPrefix(path, strings.TrimSuffix(allowed, "/")+"/") {
							why = fmt.Sprintf("has %q in its sandbox", allowed)
							break
						}
					}
				}
				if why == "" {
					continue
				}
				subject := p.ConfigRange
				if p.src != nil {
					if r, ok := p.src.config["/"+field]; ok {
						subject = r
					}
				}
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagWarning,
					Summary:  "Secret file readable by another plugin",
					Detail: fmt.Sprintf("Plugin %q can read %s, the %s of plugin %q: it %s. Give only %q's sandbox read of it.",
						o.Name, path, field, p.Name, why, p.Name),
					Subject: &subject,
				})
			}
		}
	}
	return diags
}

// secretFiles are the config values schema marks as secret files, by field,
// as absolute paths (relative ones are relative to the plugin's folder).
func secretFiles(p Plugin, schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var cfg map[string]any
	if json.Unmarshal(p.Config, &cfg) != nil {
		return nil
	}
	out := map[string]string{}
	for field, prop := range s.Properties {
		if prop[secretFileKeyword] != true {
			continue
		}
		v, ok := cfg[field].(string)
		if !ok || v == "" {
			continue
		}
		if !filepath.IsAbs(v) {
			v = filepath.Join(p.Dir, v)
		}
		out[field] = filepath.Clean(v)
	}
	return out
}
