package mcpserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/blevesearch/bleve/v2"
)

// nameSet is a visible set of the names it holds (used by pointer: a
// search's set is compared by identity).
type nameSet map[string]bool

func (s *nameSet) Has(name string) bool { return (*s)[name] }

// TestSearchRestrictedEqualsFiltered: a search restricted to the visible
// set inside bleve answers exactly what ranking every match and then
// dropping the hidden ones answers (the same tools, order and scores),
// for random visible sets, queries, servers and limits, including sets
// that hide the best matches.
func TestSearchRestrictedEqualsFiltered(t *testing.T) {
	tools := indexCatalogue()
	x, err := buildSearchIndex(tools)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	ctx := context.Background()
	queries := []string{"delete object7", "merge in server3", "object12_id", "server1_close_object5", "create", "returns it as json", "nothing matches this"}
	rng := rand.New(rand.NewPCG(46, 1))
	for round := range 60 {
		set := nameSet{}
		keep := rng.Float64()
		for _, tl := range tools {
			if rng.Float64() < keep {
				set[tl.Name] = true
			}
		}
		if round%5 == 0 {
			// Hide every tool of object7, the best matches of a query.
			for _, tl := range tools {
				if tl.Parameters != nil && len(tl.Name) > 7 && tl.Name[len(tl.Name)-8:] == "_object7" {
					delete(set, tl.Name)
				}
			}
		}
		q := queries[rng.IntN(len(queries))]
		server := ""
		if rng.IntN(3) == 0 {
			server = fmt.Sprintf("server%d", rng.IntN(10))
		}
		limit := 1 + rng.IntN(maxSearchLimit)
		got, _, err := x.search(ctx, q, server, limit, &set)
		if err != nil {
			t.Fatal(err)
		}
		want := filteredSearch(t, x, q, server, limit, set)
		if len(got) != len(want) {
			t.Fatalf("round %d, %q server %q limit %d: %d hits, want %d", round, q, server, limit, len(got), len(want))
		}
		for i := range got {
			if got[i].def.Name != want[i].def.Name || got[i].score != want[i].score {
				t.Fatalf("round %d, %q server %q limit %d: hit %d is %s (%v), want %s (%v)", round, q, server, limit, i,
					got[i].def.Name, got[i].score, want[i].def.Name, want[i].score)
			}
			if !set[got[i].def.Name] {
				t.Fatalf("round %d: hidden tool %s answered", round, got[i].def.Name)
			}
		}
	}
}

// filteredSearch ranks every match of the unrestricted query, then keeps
// the first limit visible ones.
func filteredSearch(t *testing.T, x *searchIndex, text, server string, limit int, set nameSet) []hit {
	t.Helper()
	res, err := x.bleve.Search(bleve.NewSearchRequestOptions(x.query(text, server), len(x.tools), 0, false))
	if err != nil {
		t.Fatal(err)
	}
	var out []hit
	for _, h := range res.Hits {
		if len(out) < limit && set[h.ID] {
			out = append(out, hit{def: x.tools[h.ID], score: h.Score})
		}
	}
	return out
}
