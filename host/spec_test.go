package host

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/tokenexchange"
)

func TestPluginSpec(t *testing.T) {
	t.Parallel()
	restart := deployment.Restart{Attempts: 2, Window: 30 * time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
	p := deployment.Plugin{
		Name: "index", Path: "/opt/plugins/index", Dir: "/etc/plugkit", SHA256: "306c6ca7407560340797866e077e053627ad409277d1b9da58106fce4cf717cb",
		Inject: []string{"tools", "store"}, Critical: true, Watch: true, MaxResultBytes: 1 << 20, MaxArgumentBytes: 8 << 20, Restart: restart,
		EnabledTools: []string{"search"}, DisabledTools: []string{"reindex"},
		Config: json.RawMessage(`{"root":"corpus"}`),
	}
	want := remote.Spec{
		Name: "index", Path: p.Path, Dir: p.Dir, SHA256: p.SHA256,
		Config: p.Config, Inject: []string{"tools", "store"}, Critical: true,
		Restart:        remote.RestartPolicy{Attempts: 2, Window: 30 * time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second},
		MaxResultBytes: 1 << 20, MaxArgumentBytes: 8 << 20,
		EnabledTools: []string{"search"}, DisabledTools: []string{"reindex"},
	}
	got := pluginSpec(p)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pluginSpec =\n%+v\nwant\n%+v", got, want)
	}
	// The spec owns its slices: the manager keeps it past a reload that
	// builds a new Deployment.
	got.Inject[0], got.EnabledTools[0], got.Config[2] = "x", "x", 'x'
	if p.Inject[0] != "tools" || p.EnabledTools[0] != "search" || string(p.Config) != `{"root":"corpus"}` {
		t.Error("pluginSpec shares its slices with the deployment")
	}
}

func TestPluginSpecUpstream(t *testing.T) {
	t.Parallel()
	u := &tokenexchange.Upstream{Plugin: "gh", URL: "https://upstream.example/mcp", Mode: tokenexchange.Exchange, ClientSecret: "s3cret"}
	p := deployment.Plugin{Name: "gh", Upstream: u,
		Config: json.RawMessage(`{"auth":[{"token_exchange":[{"client_id":"gateway","client_secret":"s3cret"}]}]}`)}
	spec := pluginSpec(p)
	if spec.Upstream != u {
		t.Error("the spec lacks the upstream")
	}
	if want := `{"auth":[{"token_exchange":[{"client_id":"gateway"}]}]}`; string(spec.Config) != want {
		t.Errorf("the plugin's config is %s, want %s (without the host's secret)", spec.Config, want)
	}
}

func TestManagerOptions(t *testing.T) {
	t.Parallel()
	h := deployment.Host{AutoMTLS: false, MaxMessageBytes: 1 << 20, ListenerTimeout: 1500 * time.Millisecond,
		StartTimeout: 30 * time.Second, DrainTimeout: 5 * time.Second, Receipts: true, ReceiptsFrom: "audit",
		AdminSocket: "/srv/plugkit/run/host.sock", RunDir: "/run/plugkit", ExplainOnly: true}
	got := managerOptions(h)
	want := remote.Options{DisableMTLS: true, MaxMessageBytes: 1 << 20, ListenerTimeout: 1500 * time.Millisecond,
		StartTimeout: 30 * time.Second, DrainTimeout: 5 * time.Second, Receipts: true, ReceiptsFrom: "audit",
		Guarded: h.Guarded(os.Geteuid()), SocketDir: "/run/plugkit", ExplainOnly: true}
	if len(got.Guarded) != 2 || got.Guarded[0].Path != "/srv/plugkit/run" {
		t.Errorf("managerOptions.Guarded = %+v, want the admin socket's folder and the host registry", got.Guarded)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("managerOptions = %+v, want %+v", got, want)
	}
}
