package deployment

// The plugins as a graph, an edge from each plugin to the plugins that
// provide what it injects: its cycles, and the order plugins start in.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// A graph of plugins: an edge from a plugin to each plugin providing a
// service it injects.
type graph struct {
	plugins []Plugin
	// inject[i] is plugin i's effective inject list.
	inject [][]string
	// edges[i] are plugin i's providers, one per injected service, in inject
	// order: the service, the provider and the index in inject[i].
	edges [][]edge
	diags hcl.Diagnostics
}

type edge struct {
	service string
	to      int
	item    int
}

var messages = message.NewPrinter(language.English)

func newGraph(plugins []Plugin, decls []Declaration) *graph {
	g := &graph{plugins: plugins, inject: make([][]string, len(plugins)), edges: make([][]edge, len(plugins))}
	provider := map[string]int{}
	for i, p := range plugins {
		for _, s := range decls[i].Provides {
			switch prev, dup := provider[s]; {
			case slices.Contains(builtinServices, s):
				g.diags = append(g.diags, errorAt(p.Range, "Built-in service provided",
					"Plugin %q declares that it provides %q, which the host provides itself.", p.Name, s))
			case dup:
				g.diags = append(g.diags, errorAt(p.Range, "Service provided twice",
					"Plugins %q (%s) and %q both provide %q; one service has one provider.", plugins[prev].Name, at(plugins[prev].Range), p.Name, s))
			default:
				provider[s] = i
			}
		}
	}
	provided := make([]string, 0, len(provider))
	for s := range provider {
		provided = append(provided, s)
	}
	slices.Sort(provided)

	for i, p := range plugins {
		inject := p.Inject
		if inject == nil {
			inject = decls[i].Inject
		} else if lacking := missingFrom(decls[i].Inject, inject); len(lacking) > 0 {
			g.diags = append(g.diags, errorAt(valueRange(bodyOf(p), "inject", p.Range), "Inject incomplete",
				"Plugin %q needs %s, which its inject does not list; add it or leave inject out to take what the plugin declares.", p.Name, quoteJoin(lacking)))
		}
		g.inject[i] = inject
		for item, s := range inject {
			if slices.Contains(builtinServices, s) {
				continue
			}
			j, ok := provider[s]
			if !ok {
				r := p.Range
				if p.Inject != nil {
					r = p.injectRange(item)
				}
				known := "No plugin provides a service."
				if len(provided) > 0 {
					known = "Plugins provide " + quoteJoin(provided) + "."
				}
				g.diags = append(g.diags, errorAt(r, "No provider for service",
					"Plugin %q injects %q, which is neither built in (%s) nor provided by a plugin of this deployment. %s",
					p.Name, s, strings.Join(builtinServices, ", "), known))
				continue
			}
			g.edges[i] = append(g.edges[i], edge{service: s, to: j, item: item})
		}
	}
	return g
}

func bodyOf(p Plugin) hcl.Body {
	if b := p.source().body; b != nil {
		return b
	}
	return hcl.EmptyBody()
}

func missingFrom(need, have []string) []string {
	var out []string
	for _, n := range need {
		if !slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	return out
}

func quoteJoin(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// cycles reports each dependency cycle once, at the inject item of its
// plugin that comes first in the file.
func (g *graph) cycles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, scc := range g.components() {
		start := slices.Min(scc)
		path := g.cycleFrom(start, scc)
		if path == nil {
			continue // a lone plugin that does not inject itself
		}
		names := []string{fmt.Sprintf("%q", g.plugins[start].Name)}
		var steps []string
		from := start
		for _, e := range path {
			names = append(names, fmt.Sprintf("%q", g.plugins[e.to].Name))
			steps = append(steps, fmt.Sprintf("%q injects %q from %q", g.plugins[from].Name, e.service, g.plugins[e.to].Name))
			from = e.to
		}
		p := g.plugins[start]
		r := p.Range
		if p.Inject != nil {
			r = p.injectRange(path[0].item)
		}
		diags = append(diags, errorAt(r, "Dependency cycle",
			"%s: %s; none of them can start.", strings.Join(names, " → "), strings.Join(steps, ", ")))
	}
	return diags
}

// components returns the strongly connected components (Tarjan).
func (g *graph) components() [][]int {
	n := len(g.plugins)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]int
	next := 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range g.edges[v] {
			switch {
			case index[e.to] < 0:
				visit(e.to)
				low[v] = min(low[v], low[e.to])
			case onStack[e.to]:
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] == index[v] {
			var scc []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			out = append(out, scc)
		}
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	return out
}

// cycleFrom finds a shortest path of edges within scc from start back to
// start, or nil.
func (g *graph) cycleFrom(start int, scc []int) []edge {
	type step struct {
		from int
		e    edge
	}
	prev := map[int]step{}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, e := range g.edges[v] {
			if e.to == start {
				path := []edge{e}
				for at := v; at != start; at = prev[at].from {
					path = append(path, prev[at].e)
				}
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[e.to]; !seen && slices.Contains(scc, e.to) {
				prev[e.to] = step{from: v, e: e}
				queue = append(queue, e.to)
			}
		}
	}
	return nil
}

// order is the start order of an acyclic graph: repeatedly the first plugin
// in file order whose providers have all started.
func (g *graph) order() []int {
	n := len(g.plugins)
	started := make([]bool, n)
	out := make([]int, 0, n)
	for len(out) < n {
		for i := range n {
			if started[i] || slices.ContainsFunc(g.edges[i], func(e edge) bool { return !started[e.to] }) {
				continue
			}
			started[i] = true
			out = append(out, i)
			break
		}
	}
	return out
}
