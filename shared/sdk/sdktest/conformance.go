package sdktest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Conformance runs, as subtests, the cases of the plugin protocol that
// apply to any one plugin, each on a fresh instance of def applied with
// opts: what the host checks when it starts a plugin (Describe, a strict
// config, the injects its registrations need), what it relies on when it
// calls one (an unknown handler id, the zero verdict never answered), and
// how it ends or re-applies one. The host's own rules (stage order,
// deadlines, several plugins together) are its conformance suite's, not
// a plugin's.
func Conformance[C any](t *testing.T, def sdk.Plugin[C], opts Options) {
	t.Helper()
	t.Run("Describe", func(t *testing.T) {
		d := StartUnapplied(t, def, opts).Describe
		if d.GetName() == "" {
			t.Error("Describe: no name")
		}
		if !slices.Contains(wire.ProtocolVersions, int(d.GetProtocolVersion())) {
			t.Errorf("Describe: protocol version %d, not one this host speaks (%v)", d.GetProtocolVersion(), wire.ProtocolVersions)
		}
		var schema map[string]any
		if err := json.Unmarshal(d.GetConfigSchemaJson(), &schema); err != nil {
			t.Errorf("Describe: the config schema is not a JSON object: %v", err)
		}
	})
	t.Run("UnknownConfigKey", func(t *testing.T) {
		p := StartUnapplied(t, def, opts)
		cfg := map[string]any{}
		if opts.Config != "" {
			if err := json.Unmarshal([]byte(opts.Config), &cfg); err != nil {
				t.Fatalf("Options.Config is not a JSON object: %v", err)
			}
		}
		cfg["sdktest_no_such_key"] = true
		raw, _ := json.Marshal(cfg)
		err := p.Apply(t.Context(), string(raw))
		if err == nil || !strings.Contains(err.Error(), "sdktest_no_such_key") {
			t.Errorf("Apply with an unknown config key = %v, want an error naming sdktest_no_such_key", err)
		}
	})
	t.Run("InjectsWhatItRegisters", func(t *testing.T) {
		p := Start(t, def, opts)
		if len(p.Registrations()) > 0 && !slices.Contains(p.Describe.GetInject(), "tools") {
			t.Errorf("the plugin registered %d things without injecting tools: the host refuses them", len(p.Registrations()))
		}
		seen := map[string]bool{}
		for _, r := range p.Registrations() {
			if id := r.handlerID(); id != "" {
				if seen[id] {
					t.Errorf("handler id %q registered twice", id)
				}
				seen[id] = true
			}
		}
	})
	t.Run("UnknownHandler", func(t *testing.T) {
		p := Start(t, def, opts)
		e := wire.ExecutionToProto(p.Execution("sdktest_none", ""))
		_, err := p.client.ExecuteTool(t.Context(), &pb.ExecuteToolRequest{HandlerId: "sdktest-no-such-handler", Execution: e})
		if status.Code(err) != codes.NotFound {
			t.Errorf("ExecuteTool of an unknown handler id = %v, want NOT_FOUND", err)
		}
		_, err = p.client.Guard(t.Context(), &pb.GuardRequest{HandlerId: "sdktest-no-such-handler", Execution: e})
		if status.Code(err) != codes.NotFound {
			t.Errorf("Guard of an unknown handler id = %v, want NOT_FOUND", err)
		}
	})
	t.Run("ListenersAnswer", func(t *testing.T) {
		// Every stage-1 listener and guard answers a call of each of the
		// plugin's tools (or of a tool it does not own) without failing:
		// a listener that fails denies every call it sees.
		p := Start(t, def, opts)
		names := []string{"sdktest_other"}
		for _, d := range p.Tools() {
			names = append(names, d.Name)
		}
		for _, n := range names {
			e := p.Execution(n, "")
			if _, err := p.PreExecute(t.Context(), e); err != nil {
				t.Errorf("a call of %s: %v", n, err)
			}
			if _, err := p.Guard(t.Context(), e); err != nil {
				t.Errorf("a call of %s: %v", n, err)
			}
		}
	})
	t.Run("ApplyAgain", func(t *testing.T) {
		// The host may undo a plugin's registrations and apply it again on
		// the same process: it registers afresh, and its old handlers are
		// gone.
		p := Start(t, def, opts)
		first := p.Registrations()
		if err := p.Apply(t.Context(), opts.Config); err != nil {
			t.Fatalf("a second Apply: %v", err)
		}
		again := p.Registrations()
		if len(again) != len(first) {
			t.Errorf("a second Apply registered %d things, the first %d", len(again), len(first))
		}
		for _, r := range first {
			tool, ok := r.Request.(*pb.RegisterToolRequest)
			if !ok || slices.ContainsFunc(again, func(g Registration) bool { return g.handlerID() == tool.GetHandlerId() }) {
				continue
			}
			_, err := p.client.ExecuteTool(t.Context(), &pb.ExecuteToolRequest{HandlerId: tool.GetHandlerId(), Execution: wire.ExecutionToProto(p.Execution(tool.GetTool().GetName(), ""))})
			if status.Code(err) != codes.NotFound {
				t.Errorf("the first Apply's handler %s of tool %s after a second Apply = %v, want NOT_FOUND", tool.GetHandlerId(), tool.GetTool().GetName(), err)
			}
		}
	})
	t.Run("Shutdown", func(t *testing.T) {
		p := Start(t, def, opts)
		if err := p.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		// One call is enough: the server is gone for every tool at once.
		if ds := p.Tools(); len(ds) > 0 {
			_, err := p.Execute(t.Context(), p.Execution(ds[0].Name, ""))
			if status.Code(err) != codes.Unavailable {
				t.Errorf("a call of %s after Shutdown = %v, want UNAVAILABLE", ds[0].Name, err)
			}
		}
	})
}
