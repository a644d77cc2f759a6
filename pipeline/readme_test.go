package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// readmeInHost is the in-host plugin snippet of docs/writing-a-plugin.md, line for line
// between the markers (TestREADMEInHostSnippet checks that it is).
func readmeInHost(ctx context.Context) (*pipeline.Tools, pipeline.Result) {
	// README begin
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{})
	k.Load(tools.Plugin()) // provides the "tools" service

	k.Load(kernel.Plugin{
		Name:   "files",
		Inject: []string{"tools"},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.Register(pipeline.Tool{
				ToolDescriptor: wire.ToolDescriptor{
					Name:        "delete",
					Description: "Delete a file.",
					Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
					Destructive: true,
				},
				Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
					return "deleted", nil // a real tool deletes the file here
				},
			})
			return err
		},
	})

	k.Load(kernel.Plugin{
		Name:   "safety",
		Inject: []string{"tools"},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.Guard(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				var args struct{ Path string }
				if e.Decode(&args) == nil && args.Path == "/" {
					return "refusing to delete the root filesystem", nil
				}
				return "", nil
			})
			return err
		},
	})

	r := tools.Execute(ctx, "delete", json.RawMessage(`{"path":"/"}`), "me")
	// r.OK == false, r.Error.Code == "DENIED", r.DecidedBy == "safety"
	// README end
	return tools, r
}

// TestREADMEInHostSnippet: the in-host snippet of docs/writing-a-plugin.md is the code above
// and does what its comment says (it once called a tool it never
// registered, and got UNKNOWN_TOOL).
func TestREADMEInHostSnippet(t *testing.T) {
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "\t// README begin\n")
	body, _, _ = strings.Cut(body, "\t// README end\n")
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	readme, err := os.ReadFile("../docs/writing-a-plugin.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "```go\n" + strings.Join(lines, "\n") + "\n```"; !strings.Contains(string(readme), want) {
		t.Errorf("docs/writing-a-plugin.md has no code block that is readmeInHost's body:\n%s", want)
	}
	tools, r := readmeInHost(context.Background())
	defer tools.Close()
	if r.OK || r.Code() != pipeline.CodeDenied || r.DecidedBy != "safety" {
		t.Errorf("the snippet's call = %+v; want DENIED decided by safety", r)
	}
}
