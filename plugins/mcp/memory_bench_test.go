package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/procs"
	"github.com/plugkit-go/plugkit/plugins/mcp/launcher"
)

// memServers is how many servers the larger deployment of
// BenchmarkMemoryPerServer bridges; the smaller bridges one.
const memServers = 8

// memCalls is how many echo calls each server gets before the second
// measurement.
const memCalls = 20

// memPhases are the measurements of a deployment: once ACTIVE, after the
// calls, and (with PLUGKIT_MEM_IDLE set) once the bridges have been idle
// long enough to release their heap (idlemem.go).
const memPhases = 3

func memIdle() bool { return os.Getenv("PLUGKIT_MEM_IDLE") != "" }

// BenchmarkMemoryPerServer is what one more bridged stdio server costs in
// memory beyond the server itself: the host (`host run`) is started over 1
// and over memServers bridged Go test servers, and the proportional set
// (PSS, /proc/PID/smaps_rollup) of the plugkit processes (the host, each
// bridge, each bridge's launcher; not the servers) is summed once every
// plugin is ACTIVE and again after memCalls calls to each server over MCP.
// PSS splits a page shared by n processes n ways, so the sum counts the
// plugin binary's pages once however many processes map them; the
// difference between the two deployments, per server added, is the
// marginal cost:
//
//	MiB/server                           PSS after the calls, all plugkit processes
//	anon-, file-MiB/server               the same split into anonymous and file pages
//	bridge-, launcher-, host-MiB/server  the same per kind of process
//	active-MiB/server                    PSS once ACTIVE, before any call
//
// The figures are reported, never asserted: the machines are shared. With
// PLUGKIT_MEM_BASELINE set to another build of this plugin (say of main),
// each invocation measures it too, as plugin=baseline, after this tree's
// build (plugin=tree); run the invocation several times rather than
// -count, which measures one build's rounds together, then the other's.
// PLUGKIT_MEM_HOST adds its lines to the host block (say "auto_mtls =
// false", to see what go-plugin's per-process key pair costs);
// PLUGKIT_MEM_IDLE adds a third measurement, idle-MiB/server, two idle
// release intervals after the calls (a minute more per deployment):
//
//	PLUGKIT_MEM_BASELINE=/tmp/mcp-main go test -run '^$' -bench MemoryPerServer -benchtime 1x ./plugins/mcp
func BenchmarkMemoryPerServer(b *testing.B) {
	needBinaries(b)
	plugins := []struct{ name, path string }{{"tree", bin("plugins/mcp")}}
	if base := os.Getenv("PLUGKIT_MEM_BASELINE"); base != "" {
		plugins = append(plugins, struct{ name, path string }{"baseline", base})
	}
	for _, p := range plugins {
		b.Run("plugin="+p.name, func(b *testing.B) {
			var one, many [memPhases]memSample
			for range b.N {
				o, m := memDeployment(b, p.path, 1), memDeployment(b, p.path, memServers)
				for i := range memPhases {
					one[i].add(o[i])
					many[i].add(m[i])
				}
			}
			per := func(i int, f func(memSample) uint64) float64 {
				d := float64(f(many[i])) - float64(f(one[i]))
				return d / float64(memServers-1) / float64(b.N) / (1 << 20)
			}
			all := func(s memSample) uint64 { return s.total().PSS }
			b.ReportMetric(per(1, all), "MiB/server")
			b.ReportMetric(per(1, func(s memSample) uint64 { return s.total().PSSAnon }), "anon-MiB/server")
			b.ReportMetric(per(1, func(s memSample) uint64 { return s.total().PSSFile }), "file-MiB/server")
			b.ReportMetric(per(1, func(s memSample) uint64 { return s.bridge.PSS }), "bridge-MiB/server")
			b.ReportMetric(per(1, func(s memSample) uint64 { return s.launcher.PSS }), "launcher-MiB/server")
			b.ReportMetric(per(1, func(s memSample) uint64 { return s.host.PSS }), "host-MiB/server")
			b.ReportMetric(per(0, all), "active-MiB/server")
			phases := []string{"once ACTIVE", "after calls"}
			if memIdle() {
				b.ReportMetric(per(2, all), "idle-MiB/server")
				phases = append(phases, "idle after")
			}
			// One entry of five lines: the testing package cuts a
			// benchmark's log after ten.
			log := []string{fmt.Sprintf("MiB of PSS (anonymous + file), means of %d rounds:", b.N)}
			for i, when := range phases {
				log = append(log, one[i].line(when, 1, b.N), many[i].line(when, memServers, b.N))
			}
			b.Log(strings.Join(log, "\n"))
			b.ReportMetric(0, "ns/op") // the time is the start of two hosts, not a figure
		})
	}
}

// memSample sums the memory of the plugkit processes of one deployment
// by kind.
type memSample struct{ host, bridge, launcher procs.Memory }

func (s *memSample) add(o memSample) {
	s.host.Add(o.host)
	s.bridge.Add(o.bridge)
	s.launcher.Add(o.launcher)
}

func (s memSample) total() procs.Memory {
	t := s.host
	t.Add(s.bridge)
	t.Add(s.launcher)
	return t
}

// line is the sample's PSS by kind, over rounds rounds.
func (s memSample) line(when string, servers, rounds int) string {
	mb := func(v uint64) float64 { return float64(v) / float64(rounds) / (1 << 20) }
	var out strings.Builder
	fmt.Fprintf(&out, "%s, %d servers:", when, servers)
	for _, k := range []struct {
		name string
		m    procs.Memory
	}{{"host", s.host}, {"bridges", s.bridge}, {"launchers", s.launcher}, {"all", s.total()}} {
		fmt.Fprintf(&out, "  %s %.2f (%.2f + %.2f)", k.name, mb(k.m.PSS), mb(k.m.PSSAnon), mb(k.m.PSSFile))
	}
	return out.String()
}

// memDeployment runs a host over n bridged test servers with plugin as the
// bridge and measures its plugkit processes once every plugin is ACTIVE
// and after memCalls calls to each server; the host is stopped before it
// returns.
func memDeployment(b *testing.B, plugin string, n int) [memPhases]memSample {
	b.Helper()
	dir := b.TempDir()
	addr := loopbackAddr(b)
	var blocks strings.Builder
	for i := range n {
		fmt.Fprintf(&blocks, "plugin %q {\n  path = %q\n  config {\n    command = [%q]\n  }\n}\n", server(i), plugin, bin("mcp-test-server"))
	}
	config := filepath.Join(dir, "deployment.hcl")
	hcl := fmt.Sprintf("host {\n  admin_socket = \"run/host.sock\"\n  mcp = %q\n%s\n}\n%s", addr, os.Getenv("PLUGKIT_MEM_HOST"), blocks.String())
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		b.Fatal(err)
	}
	h := startHost(b, config, n)
	defer h.stop(b)
	// What a start leaves behind settles (the bridges' first listing, the
	// host's registrations) before the first measurement.
	time.Sleep(2 * time.Second)
	var out [memPhases]memSample
	out[0] = h.memory(b, plugin)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "memory-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		b.Fatalf("connect over MCP: %v\n%s", err, h.log)
	}
	for range memCalls {
		for i := range n {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server(i) + "_echo", Arguments: map[string]any{"message": "hello"}})
			if err != nil || res.IsError {
				b.Fatalf("call %s_echo: %v %+v", server(i), err, res)
			}
		}
	}
	if err := cs.Close(); err != nil {
		b.Fatalf("close the MCP session: %v", err)
	}
	out[1] = h.memory(b, plugin)
	if memIdle() {
		// The first tick after the calls sees they moved; the next one
		// releases.
		time.Sleep(2*idleRelease + 2*time.Second)
		out[2] = h.memory(b, plugin)
	}
	return out
}

// memory measures the host and, below it, the processes running plugin:
// the bridges (the host's children) and their launchers.
func (h *hostRun) memory(t testing.TB, plugin string) memSample {
	t.Helper()
	var s memSample
	read := func(pid int) procs.Memory {
		m, err := procs.ReadMemory(pid)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	host := h.cmd.Process.Pid
	s.host = read(host)
	bridges, launchers := 0, 0
	for _, pid := range descendants(host) {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != plugin {
			continue // a server, or gone
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmdline), launcher.Arg) {
			s.launcher.Add(read(pid))
			launchers++
		} else {
			s.bridge.Add(read(pid))
			bridges++
		}
	}
	if bridges == 0 || launchers != bridges {
		t.Fatalf("found %d bridges and %d launchers running %s below the host", bridges, launchers, plugin)
	}
	return s
}

// stop stops the host with SIGTERM and waits for it to exit.
func (h *hostRun) stop(t testing.TB) {
	t.Helper()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
		t.Errorf("host did not stop within 30s of SIGTERM\n%s", h.log)
	}
}
