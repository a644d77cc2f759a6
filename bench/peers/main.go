// Command peers measures plugkit as an MCP gateway beside the proxies
// people use today, against the same upstream: npm's
// @modelcontextprotocol/server-everything `echo` over stdio, served over
// streamable HTTP on loopback by
//
//   - plugkit: bin/host with the mcp bridge, the sample's safety rules and
//     a critical audit log with fsync = "always";
//   - supergateway and mcp-proxy (npm), which govern nothing;
//   - direct: server-everything serving streamable HTTP itself.
//
// Every system is started, then rounds are interleaved (each round runs
// each system at 1 session, then at 16, the round's first system the next
// one each round), and one table is printed: p50,
// p99, calls/s, errors, CPU per call across the system's processes (the
// upstream's included, the load client's not) and the resident set of
// each process. Run it with bench/peers.sh (make bench-peers), which
// installs the pinned npm peers and builds the host first.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"
)

func main() {
	peers := flag.String("peers", "", "folder the npm peers are installed in (bench/peers.sh)")
	bin := flag.String("bin", "bin", "folder of the built host and plugins")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	dur := flag.Duration("duration", 5*time.Second, "length of each load phase")
	sessions := flag.Int("sessions", 16, "sessions of the parallel phase")
	before := flag.String("bin-before", "", "folder of another build of the host and plugins, run as plugkit-before (a before/after in one run)")
	flag.Parse()
	if *peers == "" {
		log.Fatal("-peers is required: the folder bench/peers.sh installed the npm peers in")
	}
	// The host runs the bridged server from the deployment file's folder,
	// not from here: a relative folder (bench/.peers, the default) would
	// name nothing there.
	abs, err := filepath.Abs(*peers)
	if err != nil {
		log.Fatal(err)
	}
	*peers = abs
	work, err := os.MkdirTemp("", "bench-peers-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)

	systems := []*system{plugkitSystem("plugkit", *bin, *peers)}
	if *before != "" {
		systems = append(systems, plugkitSystem("plugkit-before", *before, *peers))
	}
	systems = append(systems, supergateway(*peers), mcpProxy(*peers), direct(*peers))
	ctx := context.Background()
	for _, s := range systems {
		if err := s.start(ctx, work); err != nil {
			stopAll(systems)
			log.Fatalf("%s: %v", s.name, err)
		}
		defer s.stop()
	}
	fmt.Fprintf(os.Stderr, "%d rounds of %s per phase\n", *rounds, *dur)
	for r := range *rounds {
		// Each round starts with the next system: a system measured
		// right after another did slightly better than in the first
		// place of a round (a before/after of the same build measured
		// ≈5% apart either way), so no system keeps one place.
		for i := range systems {
			s := systems[(r+i)%len(systems)]
			for _, n := range []int{1, *sessions} {
				p, err := load(ctx, s.url, s.pid(), n, *dur)
				if err != nil {
					stopAll(systems)
					log.Fatalf("round %d, %s, %d sessions: %v", r+1, s.name, n, err)
				}
				s.result(n).add(p)
				fmt.Fprintf(os.Stderr, "round %d %-14s %2d sessions: %6.0f calls/s, p50 %.2f ms, %d errors\n",
					r+1, s.name, n, p.perSecond(), ms(p.quantile(0.5)), p.errors)
			}
		}
	}
	for _, s := range systems {
		s.rss = rssList(s.pid())
	}
	printTable(os.Stdout, systems, *sessions, *rounds, *dur)
}

func stopAll(ss []*system) {
	for _, s := range ss {
		s.stop()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
