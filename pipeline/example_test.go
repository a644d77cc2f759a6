package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// An in-host plugin registers a tool; a second plugin, written without
// knowing the tool exists, adds a guard that applies to it.
func Example() {
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{})
	defer tools.Close()
	if _, err := k.Load(tools.Plugin()); err != nil {
		panic(err)
	}

	files := kernel.Plugin{
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
					var args struct{ Path string }
					if err := e.Decode(&args); err != nil {
						return nil, err
					}
					return "deleted " + args.Path, nil
				},
			})
			return err
		},
	}
	safety := kernel.Plugin{
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
	}
	for _, p := range []kernel.Plugin{safety, files} {
		if _, err := k.Load(p); err != nil {
			panic(err)
		}
	}

	ctx := context.Background()
	for _, args := range []string{`{"path":"/tmp/x"}`, `{"path":"/"}`, `{"path":1}`} {
		r := tools.Execute(ctx, "delete", json.RawMessage(args), "example")
		if r.OK {
			fmt.Println("ok:", r.Value)
		} else {
			fmt.Println(r.Error.Code, strings.TrimSpace(r.Error.Message), r.DecidedBy)
		}
	}
	// Output:
	// ok: deleted /tmp/x
	// DENIED refusing to delete the root filesystem safety
	// INVALID_ARGUMENTS invalid arguments at /path: got number, want string
}
