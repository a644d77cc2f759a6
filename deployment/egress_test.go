package deployment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/sandbox"
)

func TestSandboxEgress(t *testing.T) {
	dir := t.TempDir()
	writeBinaries(t, dir)
	file := filepath.Join(dir, "d.hcl")
	src := `host {
  egress_resolver = "127.0.0.1:5353"
  sandbox {
    egress = ["api.github.com"]
  }
}

plugin "gh" {
  path = "bin/ok"
  sandbox {
    egress = ["API.github.com", "*.slack.com:8443", "10.0.0.0/8:5432", "[2001:db8::/32]:443"]
  }
}

plugin "inherits" {
  path = "bin/ok"
  sandbox {}
}

plugin "offline" {
  path = "bin/ok"
  sandbox {
    egress = []
  }
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d, diags := Parse(file)
	if diags.HasErrors() {
		t.Fatal(Format(diags))
	}
	if d.Host.EgressResolver != "127.0.0.1:5353" {
		t.Errorf("egress_resolver = %q", d.Host.EgressResolver)
	}
	want := map[string][]string{
		"gh":       {"api.github.com:443", "*.slack.com:8443", "10.0.0.0/8:5432", "[2001:db8::/32]:443"},
		"inherits": {"api.github.com:443"},
		"offline":  {},
	}
	for _, p := range d.Plugins {
		pol := p.Sandbox.Policy()
		if pol.Network.Mode != sandbox.NetworkEgress || !slices.Equal(pol.Network.Egress, want[p.Name]) {
			t.Errorf("plugin %s: network %+v, want egress %q", p.Name, pol.Network, want[p.Name])
		}
	}
}

func TestSandboxEgressErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`egress = ["bad name"]`, `d.hcl:4:15: Invalid egress entry: Item 1 of egress: "bad name": host name "bad name" has ' '`},
		{`egress = ["ok.example.com", "x.example.com:0"]`, `Item 2 of egress: "x.example.com:0": port "0" is not a number from 1 to 65535`},
		{`egress = ["*.com"]`, `a wildcard must leave at least two labels`},
		{`egress = [443]`, `Item 1 of egress is not a string`},
		{`egress = "learn"`, `egress must be a list of destinations`},
		{"network = \"host\"\n    egress = []", `egress sets the plugin's network`},
	} {
		dir := t.TempDir()
		writeBinaries(t, dir)
		file := filepath.Join(dir, "d.hcl")
		src := "plugin \"p\" {\n  path = \"bin/ok\"\n  sandbox {\n    " + tc.body + "\n  }\n}\n"
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, diags := Parse(file)
		if got := Format(diags); !diags.HasErrors() || !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n%s\nwant %q", tc.body, got, tc.want)
		}
	}
}

func TestEgressResolverInvalid(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "d.hcl")
	if err := os.WriteFile(file, []byte("host {\n  egress_resolver = \"10.0.0.2\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := Parse(file)
	if got := Format(diags); !diags.HasErrors() || !strings.Contains(got, "d.hcl:2:21: Invalid egress_resolver: egress_resolver must be a DNS server's host:port") {
		t.Errorf("got:\n%s", got)
	}
}
