package main

import (
	"fmt"
	"io"
	"time"
)

func printTable(w io.Writer, ss []*system, sessions, rounds int, dur time.Duration) {
	base := ss[0] // plugkit
	fmt.Fprintf(w, "%d interleaved rounds, %s per phase; ratios are to plugkit (calls/s: theirs ÷ plugkit's; latency and CPU: theirs ÷ plugkit's); CPU is the whole process tree's, gateway CPU the same without the upstream server's processes\n\n", rounds, dur)
	fmt.Fprintf(w, "| system | sessions | p50 ms | p99 ms | calls/s | errors | CPU ms/call | gateway CPU ms/call | p50 × | calls/s × | CPU × |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range []int{1, sessions} {
		b := base.result(n)
		for _, s := range ss {
			p := s.result(n)
			fmt.Fprintf(w, "| %s | %d | %.2f | %.2f | %.0f | %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
				s.name, n, ms(p.quantile(0.5)), ms(p.quantile(0.99)), p.perSecond(), p.errors, p.cpuPerCall(), p.gatewayCPUPerCall(),
				ratio(ms(p.quantile(0.5)), ms(b.quantile(0.5))), ratio(p.perSecond(), b.perSecond()), ratio(p.cpuPerCall(), b.cpuPerCall()))
		}
	}
	fmt.Fprintf(w, "\nresident set per process in MiB (in parentheses its anonymous part: heap, stacks, written data; the rest is mostly its binary's pages, held once per binary), after the rounds:\n\n")
	for _, s := range ss {
		fmt.Fprintf(w, "- %s: %s\n", s.name, s.rss)
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
