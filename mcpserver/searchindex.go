package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/plugkit-go/plugkit/pipeline"
)

// The fields of a tool's search document. The registry carries no tool
// titles, so there is none to index.
const (
	fieldName   = "name"
	fieldDesc   = "description"
	fieldParams = "params"
	fieldOwner  = "owner"
)

// Boosts of the fields in a query: a word of the name says more about a
// tool than one of its description.
var fieldBoosts = []struct {
	field string
	boost float64
}{{fieldName, 3}, {fieldParams, 1.5}, {fieldDesc, 1}}

// searchIndex is an in-memory BM25 index of the tools served over MCP,
// built whole from one tool set (a change to the set builds a new one).
// Its documents are keyed by tool name; tools holds their definitions as
// served, so that a hit is answered without reading the index's stored
// fields.
type searchIndex struct {
	tools map[string]*toolDef

	// mu keeps the index open while a search reads it: close takes it
	// exclusively.
	mu     sync.RWMutex
	bleve  bleve.Index
	closed bool
	// masks are the visible sets' masks over the index's documents.
	masks masks
}

// toolDef is a tool as search_tools answers it.
type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Server      string          `json:"server"`
	// ReadOnly and Destructive are the tool's hints, as tools/list gives them.
	ReadOnly    bool `json:"readOnly,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
}

// searchDoc is what bleve indexes of a tool.
type searchDoc struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Params      string `json:"params"`
	Owner       string `json:"owner"`
}

// buildSearchIndex indexes tools (the served ones: no held tool, no other
// kind).
func buildSearchIndex(tools []pipeline.ToolInfo) (*searchIndex, error) {
	b, err := bleve.NewUsing("", searchMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("create the tool search index: %w", err)
	}
	x := &searchIndex{bleve: b, tools: make(map[string]*toolDef, len(tools))}
	// In name order: equal scores rank in the order tools were indexed.
	slices.SortFunc(tools, func(a, b pipeline.ToolInfo) int { return strings.Compare(a.Name, b.Name) })
	batch := b.NewBatch()
	for _, t := range tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			continue // not served, see sync
		}
		x.tools[t.Name] = &toolDef{Name: t.Name, Description: t.Description, InputSchema: schema,
			Server: t.Owner, ReadOnly: t.ReadOnly, Destructive: t.Destructive}
		doc := searchDoc{Name: words(t.Name) + " " + t.Name, Description: t.Description,
			Params: paramWords(schema), Owner: t.Owner}
		if err := batch.Index(t.Name, doc); err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("index tool %s: %w", t.Name, err)
		}
		if batch.Size() >= 1000 {
			if err := b.Batch(batch); err != nil {
				_ = b.Close()
				return nil, fmt.Errorf("build the tool search index: %w", err)
			}
			batch.Reset()
		}
	}
	if err := b.Batch(batch); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("build the tool search index: %w", err)
	}
	return x, nil
}

// searchMapping indexes names, parameter names and descriptions as English
// text (stemming lets "files" find "file"), the owner as one keyword for
// the server filter, and scores with BM25. Nothing is stored: hits are
// answered from searchIndex.tools.
func searchMapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = en.AnalyzerName
	m.ScoringModel = index.BM25Scoring
	doc := bleve.NewDocumentStaticMapping()
	for _, f := range []string{fieldName, fieldDesc, fieldParams} {
		fm := bleve.NewTextFieldMapping()
		fm.Store, fm.DocValues, fm.IncludeTermVectors = false, false, false
		doc.AddFieldMappingsAt(f, fm)
	}
	owner := bleve.NewKeywordFieldMapping()
	owner.Analyzer = keyword.Name
	owner.Store, owner.DocValues, owner.IncludeTermVectors = false, false, false
	doc.AddFieldMappingsAt(fieldOwner, owner)
	m.DefaultMapping = doc
	return m
}

// hit is one ranked match.
type hit struct {
	def   *toolDef
	score float64
}

// search ranks the tools matching text (words, in any field), of server
// only when server is not "", and returns the first limit that visible
// holds, with the number of visible tools that matched. The query is
// restricted to visible inside bleve (searchfilter.go): one ranking, and
// a hidden tool takes no place in the answer, however well it matches.
func (x *searchIndex) search(ctx context.Context, text, server string, limit int, visible visibility) ([]hit, uint64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, 0, errIndexClosed
	}
	// Ordered by score alone: a tie-break on the name would make bleve
	// load the name of every match. Equal scores keep the index's order,
	// which is the names' (buildSearchIndex indexes them sorted).
	q := visibleQuery{q: x.query(text, server), visible: visible, masks: &x.masks}
	res, err := x.bleve.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, limit, 0, false))
	if err != nil {
		return nil, 0, fmt.Errorf("search the tools: %w", err)
	}
	out := make([]hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		if d := x.tools[h.ID]; d != nil && visible.Has(h.ID) {
			out = append(out, hit{def: d, score: h.Score})
		}
	}
	return out, res.Total, nil
}

// query is the bleve query of text, of server only when server is not "".
func (x *searchIndex) query(text, server string) query.Query {
	// The query's words, and those of any name it holds split apart:
	// "delete_file" finds delete_file (its own token) and delete_record.
	terms := text
	if w := words(text); w != strings.ToLower(text) {
		terms += " " + w
	}
	fields := make([]query.Query, 0, len(fieldBoosts))
	for _, f := range fieldBoosts {
		mq := bleve.NewMatchQuery(terms)
		mq.SetField(f.field)
		mq.SetBoost(f.boost)
		fields = append(fields, mq)
	}
	var q query.Query = bleve.NewDisjunctionQuery(fields...)
	if server != "" {
		tq := bleve.NewTermQuery(server)
		tq.SetField(fieldOwner)
		q = bleve.NewConjunctionQuery(q, tq)
	}
	return q
}

var errIndexClosed = fmt.Errorf("the tool search index was replaced")

// close closes the index once no search reads it.
func (x *searchIndex) close() error {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	return x.bleve.Close()
}

// words splits names into lower-case words: read_file, readFile and
// read-file are "read file".
func words(s string) string {
	var b strings.Builder
	prev := rune(0)
	for _, c := range s {
		switch {
		case c == '_' || c == '-' || c == '.' || c == '/' || c == ':':
			c = ' '
		case unicode.IsUpper(c) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(c))
		prev = c
	}
	return b.String()
}

// paramWords is the names of a schema's top-level properties, each as
// itself and split into words.
func paramWords(schema json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var b strings.Builder
	for name := range s.Properties {
		b.WriteString(name)
		b.WriteByte(' ')
		b.WriteString(words(name))
		b.WriteByte(' ')
	}
	return b.String()
}
