package host

import (
	"os"
	"slices"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/remote"
)

// pluginSpec is a plugin block as the plugin manager runs it. The
// deployment package holds the file's data only; turning it into the
// runtime's types is the host's.
func pluginSpec(p deployment.Plugin) remote.Spec {
	return remote.Spec{
		Name:     p.Name,
		Path:     p.Path,
		Dir:      p.Dir,
		SHA256:   p.SHA256,
		Config:   slices.Clone(p.PluginConfig()),
		Inject:   slices.Clone(p.Inject),
		Critical: p.Critical,
		Restart:  remote.RestartPolicy(p.Restart),

		MaxResultBytes:   p.MaxResultBytes,
		MaxArgumentBytes: p.MaxArgumentBytes,

		EnabledTools:  slices.Clone(p.EnabledTools),
		DisabledTools: slices.Clone(p.DisabledTools),
		Sandbox:       p.Sandbox.Policy(),
		Upstream:      p.Upstream,
	}
}

// managerOptions are the host block's settings the plugin manager takes
// (the caller adds the Logger and the hooks).
func managerOptions(h deployment.Host) remote.Options {
	return remote.Options{
		DisableMTLS:     !h.AutoMTLS,
		MaxMessageBytes: h.MaxMessageBytes,
		ListenerTimeout: h.ListenerTimeout,
		StartTimeout:    h.StartTimeout,
		DrainTimeout:    h.DrainTimeout,
		Receipts:        h.Receipts,
		ReceiptsFrom:    h.ReceiptsFrom,
		Guarded:         h.Guarded(os.Geteuid()),
		SocketDir:       h.RunDir,
		ExplainOnly:     h.ExplainOnly,
	}
}
