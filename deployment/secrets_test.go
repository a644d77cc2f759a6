package deployment

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSecretFileWarnings(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"key":{"type":"string","x-plugkit-secret-file":true}}}`)
	audit := Plugin{Name: "audit", Dir: "/d", Config: json.RawMessage(`{"path":"var/a.log","key":"keys/audit.key"}`),
		Sandbox: &Sandbox{Read: []string{"/d/keys"}, Write: []string{"/d/var"}}}
	for _, c := range []struct {
		name  string
		other *Sandbox
		want  string
	}{
		{"no sandbox", nil, `Plugin "files" can read /d/keys/audit.key, the key of plugin "audit": it has no sandbox`},
		{"reads the folder", &Sandbox{Read: []string{"/d"}}, `it has "/d" in its sandbox`},
		{"writes the file", &Sandbox{Write: []string{"/d/keys/audit.key"}}, `it has "/d/keys/audit.key" in its sandbox`},
		{"elsewhere", &Sandbox{Read: []string{"/d/work", "/d/keys2"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := Plugin{Name: "files", Dir: "/d", Config: json.RawMessage(`{}`), Sandbox: c.other}
			diags := secretFileWarnings([]Plugin{audit, files}, []Declaration{{ConfigSchema: schema}, {}})
			switch {
			case c.want == "" && len(diags) != 0:
				t.Errorf("warned: %v", diags)
			case c.want != "" && (len(diags) != 1 || !strings.Contains(diags[0].Detail, c.want)):
				t.Errorf("got %v, want one warning containing %q", diags, c.want)
			}
		})
	}
}
