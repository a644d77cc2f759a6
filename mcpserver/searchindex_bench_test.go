package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The index alone, without MCP around it: building it for 10,000 tools
// (the follow loop does it after each change of the tool set) and one
// search, nothing hidden:
//
//	go test -run '^$' -bench SearchIndex10k ./mcpserver/

func indexCatalogue() []pipeline.ToolInfo {
	verbs := []string{"get", "list", "create", "update", "delete", "search", "archive", "restore", "export", "import",
		"share", "lock", "unlock", "assign", "comment", "label", "merge", "close", "open", "watch",
		"copy", "move", "rename", "publish", "sync"}
	var ts []pipeline.ToolInfo
	for s := range 10 {
		for _, v := range verbs {
			for o := range 40 {
				ts = append(ts, pipeline.ToolInfo{
					ToolDescriptor: wire.ToolDescriptor{
						Name: fmt.Sprintf("server%d_%s_object%d", s, v, o), Owner: fmt.Sprintf("server%d", s),
						Description: fmt.Sprintf("%s an object%d in server%d; returns it as JSON.", v, o, s),
						Parameters:  json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"object%d_id":{"type":"string"}}}`, o)),
					},
				})
			}
		}
	}
	return ts
}

func BenchmarkSearchIndex10k(b *testing.B) {
	tools := indexCatalogue()
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			x, err := buildSearchIndex(tools)
			if err != nil {
				b.Fatal(err)
			}
			_ = x.close()
		}
	})
	x, err := buildSearchIndex(tools)
	if err != nil {
		b.Fatal(err)
	}
	defer x.close()
	var all everything
	queries := []string{"delete object7", "merge in server3", "object12_id", "server1_close_object5"}
	b.Run("search", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			hits, _, err := x.search(context.Background(), queries[i%len(queries)], "", defaultSearchLimit, all)
			if err != nil || len(hits) == 0 {
				b.Fatalf("%q: %v, %d hits", queries[i%len(queries)], err, len(hits))
			}
			i++
		}
	})
}

// everything is a visible set that holds every tool.
type everything struct{}

func (everything) Has(string) bool { return true }

// BenchmarkSearchIndex10kHalfHidden is the same search with every other
// tool hidden: restricted inside bleve, it should cost what the search
// with nothing hidden costs.
func BenchmarkSearchIndex10kHalfHidden(b *testing.B) {
	tools := indexCatalogue()
	x, err := buildSearchIndex(tools)
	if err != nil {
		b.Fatal(err)
	}
	defer x.close()
	set := nameSet{}
	for i, t := range tools {
		if i%2 == 1 {
			set[t.Name] = true
		}
	}
	queries := []string{"delete object7", "merge in server3", "object12_id", "server1_close_object5"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := x.search(context.Background(), queries[i%len(queries)], "", defaultSearchLimit, &set); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
