package mcpserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// A search is restricted to the caller's visible set inside bleve: the
// query's searcher is wrapped by one that skips every document of a hidden
// tool before the collector sees it. So one search ranks the matches once
// and its top hits are all visible, however many of the best matches are
// hidden (reading pages of hits and filtering them afterwards made bleve
// rank the whole query again for each page, which for a query naming
// hidden tools meant many times). Scores are unchanged: BM25's statistics
// are the whole index's either way, and skipping a document changes no
// other's score or order.
//
// The searcher sees documents by their internal number, which is the
// index snapshot's; so each snapshot's numbers are mapped to tool names
// once, and each visible set to a mask over those numbers once per
// snapshot (the sets are themselves cached per principal class).

// visibility is what a search is restricted to: a visible set, compared
// by identity for the cache of masks (a *pipeline.VisibleSet is replaced,
// never changed, when what a principal sees changes).
type visibility interface {
	Has(name string) bool
}

// maxMasks bounds the masks kept per snapshot: past it they start over,
// which costs a recomputation, never a wrong answer.
const maxMasks = 256

// docNames maps one index snapshot's document numbers to tool names, and
// keeps the masks made from it.
type docNames struct {
	snapshot index.IndexReader
	names    []string // by document number; "" for none

	mu    sync.Mutex
	masks map[visibility][]bool
}

// masks is a searchIndex's cache of docNames, for its latest snapshot
// (scorch makes a new one when it merges segments after the build).
type masks struct {
	mu     sync.Mutex
	latest *docNames
}

// mask is the mask of visible over the snapshot r.
func (m *masks) mask(r index.IndexReader, visible visibility) ([]bool, error) {
	m.mu.Lock()
	d := m.latest
	m.mu.Unlock()
	if d == nil || d.snapshot != r {
		names, err := snapshotNames(r)
		if err != nil {
			return nil, err
		}
		d = &docNames{snapshot: r, names: names, masks: map[visibility][]bool{}}
		m.mu.Lock()
		m.latest = d
		m.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if mk, ok := d.masks[visible]; ok {
		return mk, nil
	}
	mk := make([]bool, len(d.names))
	for i, n := range d.names {
		mk[i] = n != "" && visible.Has(n)
	}
	if len(d.masks) >= maxMasks {
		clear(d.masks)
	}
	d.masks[visible] = mk
	return mk, nil
}

// snapshotNames reads the tool name of every document of snapshot r.
func snapshotNames(r index.IndexReader) ([]string, error) {
	all, err := r.DocIDReaderAll()
	if err != nil {
		return nil, fmt.Errorf("read the search index's documents: %w", err)
	}
	defer all.Close()
	var names []string
	for {
		id, err := all.Next()
		if err != nil {
			return nil, fmt.Errorf("read the search index's documents: %w", err)
		}
		if id == nil {
			return names, nil
		}
		n := id.Value()
		name, err := r.ExternalID(id)
		if err != nil {
			return nil, fmt.Errorf("read the search index's document %d: %w", n, err)
		}
		for uint64(len(names)) <= n {
			names = append(names, "")
		}
		names[n] = name
	}
}

// visibleQuery is q restricted to the documents of visible tools.
type visibleQuery struct {
	q       query.Query
	visible visibility
	masks   *masks
}

func (v visibleQuery) Searcher(ctx context.Context, r index.IndexReader, m mapping.IndexMapping, o search.SearcherOptions) (search.Searcher, error) {
	mask, err := v.masks.mask(r, v.visible)
	if err != nil {
		return nil, err
	}
	s, err := v.q.Searcher(ctx, r, m, o)
	if err != nil {
		return nil, err
	}
	return &visibleSearcher{Searcher: s, mask: mask}, nil
}

// visibleSearcher passes on the matches of its searcher whose document is
// in mask.
type visibleSearcher struct {
	search.Searcher
	mask []bool
}

func (s *visibleSearcher) shown(d *search.DocumentMatch) bool {
	n := d.IndexInternalID.Value()
	return n < uint64(len(s.mask)) && s.mask[n]
}

func (s *visibleSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	for {
		d, err := s.Searcher.Next(ctx)
		if err != nil || d == nil || s.shown(d) {
			return d, err
		}
		ctx.DocumentMatchPool.Put(d)
	}
}

func (s *visibleSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	d, err := s.Searcher.Advance(ctx, id)
	if err != nil || d == nil || s.shown(d) {
		return d, err
	}
	ctx.DocumentMatchPool.Put(d)
	return s.Next(ctx)
}
