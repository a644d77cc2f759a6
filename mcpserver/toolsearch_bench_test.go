package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/mcpserver"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// search_tools at 10,000 tools, over a pair of OS pipes: a search's cost
// against a call of the fixture's echo tool in the same run (report the
// ratio), with nothing hidden and with half the catalogue hidden; and the
// size of tools/list, every page, without and with tool search:
//
//	go test -run '^$' -bench ToolSearch10k -benchmem ./mcpserver/

// searchCatalogue is 10,000 tools of 10 servers × 25 verbs × 40 objects,
// named and described as real ones are, so that BM25 has words to rank.
func searchCatalogue() []pipeline.Tool {
	servers := []string{"github", "jira", "slack", "drive", "postgres", "stripe", "calendar", "mail", "k8s", "notion"}
	verbs := []string{"get", "list", "create", "update", "delete", "search", "archive", "restore", "export", "import",
		"share", "lock", "unlock", "assign", "comment", "label", "merge", "close", "open", "watch",
		"copy", "move", "rename", "publish", "sync"}
	objects := []string{"issue", "pull_request", "branch", "commit", "file", "folder", "message", "channel", "user", "group",
		"invoice", "payment", "customer", "event", "calendar", "table", "row", "schema", "pod", "deployment",
		"secret", "page", "database", "comment", "label", "project", "sprint", "board", "ticket", "attachment",
		"thread", "reaction", "draft", "contact", "refund", "subscription", "namespace", "service", "volume", "webhook"}
	var ts []pipeline.Tool
	for _, s := range servers {
		for _, v := range verbs {
			for _, o := range objects {
				words := strings.ReplaceAll(o, "_", " ")
				ts = append(ts, pipeline.Tool{
					ToolDescriptor: wire.ToolDescriptor{
						Name: fmt.Sprintf("%s_%s_%s", s, v, o),
						Description: fmt.Sprintf("%s a %s in %s. Needs the %s id; returns the %s as JSON, with its owner and when it last changed.",
							strings.ToUpper(v[:1])+v[1:], words, s, words, words),
						Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"%s_id":{"type":"string","description":"the %s"},"workspace":{"type":"string"}},"required":["%s_id"]}`, o, words, o)),
					},
					Execute: func(context.Context, *pipeline.Execution) (any, error) { return "ok", nil },
				})
			}
		}
	}
	return ts
}

var benchQueries = []string{`create an issue in jira`, `delete file`, `refund a payment`, `list pods in a namespace`,
	`send message to channel`, `merge pull request`, `customer_id`, `github_close_issue`}

func BenchmarkToolSearch10k(b *testing.B) {
	ctx := context.Background()
	catalogue := searchCatalogue()
	for _, hide := range []int{0, len(catalogue) / 2} {
		f := newFixtureWith(b, 5*time.Second, mcpserver.Options{ToolSearch: true})
		plugins := []kernel.Plugin{{Name: "many", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, _ := pipeline.RegistrarOf(s)
			_, errs, err := reg.RegisterTools(nil, catalogue)
			if err == nil && errs != nil {
				err = fmt.Errorf("%v", errs)
			}
			return err
		}}}
		if hide > 0 {
			var hidden []string
			for i := 0; i < len(catalogue); i += 2 {
				hidden = append(hidden, catalogue[i].Name)
			}
			plugins = append(plugins, hideFrom("rules", "*", hidden...))
		}
		for _, p := range plugins {
			if _, err := f.h.Kernel().Load(p); err != nil {
				b.Fatal(err)
			}
		}
		cs := connectStdio(b, ctx, f.srv, newClient(nil), "2025-11-25")
		call := func(name string, args any) *mcp.CallToolResult {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %s", name, err, text(res))
			}
			return res
		}
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(text(call(mcpserver.SearchToolName, map[string]any{"query": "jira"})), "jira_") {
			if time.Now().After(deadline) {
				b.Fatal("the catalogue never became searchable")
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.Run(fmt.Sprintf("echo-call-baseline-hiding-%d", hide), func(b *testing.B) {
			loopCPU(b, func() { call("echo", map[string]any{"text": "hi"}) })
		})
		b.Run(fmt.Sprintf("search-hiding-%d", hide), func(b *testing.B) {
			i := 0
			loopCPU(b, func() {
				call(mcpserver.SearchToolName, map[string]any{"query": benchQueries[i%len(benchQueries)]})
				i++
			})
		})
	}
}

// BenchmarkToolsListBytes10k reports the bytes of tools/list, every page,
// for the 10,000-tool catalogue without tool search and with it.
func BenchmarkToolsListBytes10k(b *testing.B) {
	ctx := context.Background()
	catalogue := searchCatalogue()
	for _, search := range []bool{false, true} {
		b.Run(fmt.Sprintf("tool-search-%v", search), func(b *testing.B) {
			f := newFixtureWith(b, 5*time.Second, mcpserver.Options{ToolSearch: search})
			if _, err := f.h.Kernel().Load(kernel.Plugin{Name: "many", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
				reg, _ := pipeline.RegistrarOf(s)
				_, _, err := reg.RegisterTools(nil, catalogue)
				return err
			}}); err != nil {
				b.Fatal(err)
			}
			cs := connectStdio(b, ctx, f.srv, newClient(nil), "2025-11-25")
			size := func() (bytes, tools int) {
				var cursor string
				for {
					res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
					if err != nil {
						b.Fatal(err)
					}
					j, _ := json.Marshal(res)
					bytes += len(j)
					tools += len(res.Tools)
					if cursor = res.NextCursor; cursor == "" {
						return bytes, tools
					}
				}
			}
			deadline := time.Now().Add(60 * time.Second)
			for _, n := size(); !search && n < len(catalogue); _, n = size() {
				if time.Now().After(deadline) {
					b.Fatal("the catalogue was never listed")
				}
				time.Sleep(10 * time.Millisecond)
			}
			var bytes, tools int
			for b.Loop() {
				bytes, tools = size()
			}
			b.ReportMetric(float64(bytes), "list-bytes")
			b.ReportMetric(float64(tools), "tools-listed")
		})
	}
}
