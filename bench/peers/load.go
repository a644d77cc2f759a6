package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// phase is what one load phase measured: every call's latency, the
// errors, and the CPU the system's processes spent meanwhile.
type phase struct {
	lat      []time.Duration
	errors   int
	elapsed  time.Duration
	cpuTicks uint64
	// upstreamTicks is the part of cpuTicks the upstream server spent.
	upstreamTicks uint64
}

func (p *phase) add(q phase) {
	p.lat = append(p.lat, q.lat...)
	p.errors += q.errors
	p.elapsed += q.elapsed
	p.cpuTicks += q.cpuTicks
	p.upstreamTicks += q.upstreamTicks
}

func (p phase) quantile(q float64) time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	s := slices.Clone(p.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func (p phase) perSecond() float64 {
	if p.elapsed == 0 {
		return 0
	}
	return float64(len(p.lat)) / p.elapsed.Seconds()
}

// cpuPerCall is the system's CPU time per call, in milliseconds.
func (p phase) cpuPerCall() float64 {
	if len(p.lat) == 0 {
		return 0
	}
	return float64(p.cpuTicks) * 1000 / clockTicks / float64(len(p.lat))
}

// gatewayCPUPerCall is cpuPerCall without the upstream server's share: what
// the gateway's own processes spent per call.
func (p phase) gatewayCPUPerCall() float64 {
	if len(p.lat) == 0 {
		return 0
	}
	return float64(p.cpuTicks-min(p.upstreamTicks, p.cpuTicks)) * 1000 / clockTicks / float64(len(p.lat))
}

// client opens MCP sessions to one endpoint over streamable HTTP. Its
// transport keeps as many idle connections as there are sessions, and
// calls are not cancelled once answered: with net/http's default (2 idle
// connections per host) and a context cancelled after each call, the SDK
// loses a connection every few calls (docs/performance.md), and the
// gateways would be measured accepting connections.
type client struct {
	url string
	tr  *http.Transport
}

func newClient(url string, sessions int) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2*sessions + 2
	return &client{url: url, tr: tr}
}

func (c *client) connect(ctx context.Context) (*mcp.ClientSession, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench-peers", Version: "1"}, nil)
	return cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: &http.Client{Transport: c.tr}}, nil)
}

// echo makes one call and checks its answer.
func echo(s *mcp.ClientSession, msg string) error {
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("echo answered an error: %v", res.Content)
	}
	return nil
}

// load runs sessions sessions, each calling echo one call after another,
// for d, and measures the CPU of the process tree under root meanwhile.
func load(ctx context.Context, url string, root, sessions int, d time.Duration) (phase, error) {
	c := newClient(url, sessions)
	defer c.tr.CloseIdleConnections()
	ss := make([]*mcp.ClientSession, sessions)
	for i := range ss {
		s, err := c.connect(ctx)
		if err != nil {
			return phase{}, fmt.Errorf("session %d to %s: %w", i, url, err)
		}
		defer s.Close()
		ss[i] = s
		if err := echo(s, "warm-up"); err != nil {
			return phase{}, fmt.Errorf("first call to %s: %w", url, err)
		}
	}
	var (
		mu  sync.Mutex
		out phase
		wg  sync.WaitGroup
	)
	cpu0, up0 := treeCPU(root)
	start := time.Now()
	stop := start.Add(d)
	for _, s := range ss {
		wg.Go(func() {
			var lat []time.Duration
			errs := 0
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := echo(s, "hello from bench-peers"); err != nil {
					errs++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			out.lat = append(out.lat, lat...)
			out.errors += errs
			mu.Unlock()
		})
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	if cpu, up := treeCPU(root); cpu > cpu0 {
		out.cpuTicks = cpu - cpu0
		out.upstreamTicks = up - min(up, up0)
	}
	return out, nil
}
