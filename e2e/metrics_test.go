package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// freePort returns a loopback address nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// scrape fetches /metrics from addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %v\n%s", resp.StatusCode, err, b)
	}
	return string(b)
}

// value is the value of the series of family name whose labels include
// want; found is false when there is none.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, found bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if labels[k] != w {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsScrape: with metrics set in the host block, /metrics serves
// the families a known sequence of calls must produce, with their values,
// in a format the Prometheus text parser reads and promtool accepts.
func TestMetricsScrape(t *testing.T) {
	needShippedDeployment(t)
	addr := freePort(t)
	h := startFaultHost(t, deploymentTweaks{host: fmt.Sprintf("  metrics = %q\n", addr), plugin: func(name string) string {
		if name == "audit" {
			return "  critical = true\n"
		}
		return ""
	}})
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"notes.md"}`},
		{"read_file", `{"path":"todo.md"}`},
		{"read_file", `{"path":"../outside.txt"}`},
		{"no_such_tool", `{}`},
		{"another_made_up_name", `{}`},
		// Destructive: asked, and the CLI without a terminal cannot answer.
		{"delete_file", `{"path":"todo.md"}`},
	} {
		callJSON(t, h.config, c.tool, c.args)
	}
	if _, stderr, code := cli(t, "reload", "files", "-c", h.config); code != 0 {
		t.Fatalf("reload files: exit %d %s", code, stderr)
	}

	text := scrape(t, addr)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, text)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"plugkit_calls_total", map[string]string{"tool": "read_file", "code": "ok", "decided_by": ""}, 2},
		{"plugkit_calls_total", map[string]string{"tool": "read_file", "code": "DENIED", "decided_by": "safety"}, 1},
		{"plugkit_calls_total", map[string]string{"tool": "(unknown)", "code": "UNKNOWN_TOOL"}, 2},
		{"plugkit_call_duration_seconds", map[string]string{"tool": "read_file"}, 3},
		{"plugkit_approvals_total", map[string]string{"tool": "delete_file", "outcome": "failed"}, 1},
		{"plugkit_plugin_rpc_duration_seconds", map[string]string{"plugin": "files", "kind": "tool"}, 2},
		{"plugkit_reloads_total", map[string]string{"result": "ok"}, 1},
		{"plugkit_reloads_total", map[string]string{"result": "failed"}, 0},
		{"plugkit_plugin_state", map[string]string{"plugin": "files", "state": "ACTIVE"}, 1},
		{"plugkit_plugin_state", map[string]string{"plugin": "files", "state": "FAILED"}, 0},
		{"plugkit_plugin_problem", map[string]string{"plugin": "audit"}, 0},
		{"plugkit_plugin_restarts_total", map[string]string{"plugin": "safety"}, 0},
		{"plugkit_calls_in_flight", nil, 0},
		{"plugkit_plugin_results_resent_total", map[string]string{"plugin": "audit"}, 0},
		{"plugkit_plugin_results_dropped_total", map[string]string{"plugin": "audit"}, 0},
		{"plugkit_build_info", map[string]string{"version": Version}, 1},
	} {
		got, ok := value(families, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, plugin := range []string{"index", "search", "files", "safety", "audit"} {
		if rss, ok := value(families, "plugkit_plugin_resident_memory_bytes", map[string]string{"plugin": plugin}); !ok || rss < 1<<20 {
			t.Errorf("%s's resident memory = %v (found %v)", plugin, rss, ok)
		}
		if took, ok := value(families, "plugkit_plugin_start_duration_seconds", map[string]string{"plugin": plugin}); !ok || took <= 0 {
			t.Errorf("%s's start duration = %v (found %v)", plugin, took, ok)
		}
		if _, ok := value(families, "plugkit_plugin_cpu_seconds_total", map[string]string{"plugin": plugin}); !ok {
			t.Errorf("no CPU time for %s", plugin)
		}
	}
	if q, ok := value(families, "plugkit_plugin_results_queued", map[string]string{"plugin": "audit"}); !ok || q < 0 {
		t.Errorf("audit's results queued = %v (found %v)", q, ok)
	}
	if _, ok := value(families, "plugkit_plugin_results_queued", map[string]string{"plugin": "files"}); ok {
		t.Error("a queue for files, which is not critical")
	}
	if strings.Contains(text, "no_such_tool") || strings.Contains(text, "notes.md") {
		t.Error("a caller's free text (a made-up tool name, an argument) is a label")
	}

	promtool := testenv.LookPath(t, "promtool")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
