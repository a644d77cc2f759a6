// Command wordcount is a plugkit plugin made from examples/plugin-template:
// a tool, word_count, and a stage-1 listener that denies calls of it whose
// text holds a word the deployment forbids. Rename it and make it yours.
package main

import (
	"context"
	"slices"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// Config is the plugin's config block in the deployment file, decoded
// strictly: an unknown key is an error that names it.
type Config struct {
	// Forbidden words make the listener deny a call; optional.
	Forbidden []string `json:"forbidden,omitempty" doc:"words a text may not contain"`
}

// Plugin is the whole plugin; main serves it, and its tests run it with
// sdktest.
var Plugin = sdk.Plugin[Config]{
	Name:    "wordcount",
	Version: "0.1.0",
	Inject:  []string{"tools"}, // needed to register tools and listeners
	Apply: func(ctx context.Context, p *sdk.Context, cfg Config) error {
		if _, err := p.RegisterTool(ctx, sdk.Tool{
			Name:        "word_count",
			Description: "Counts the words of a text.",
			Parameters:  `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
			ReadOnly:    true,
			Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
				var in struct{ Text string }
				if err := call.Bind(&in); err != nil {
					return nil, err
				}
				return len(strings.Fields(in.Text)), nil
			},
		}); err != nil {
			return err
		}
		_, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{
			Name:  "forbidden-words",
			Tools: []string{"word_count"},
			Filter: func(ctx context.Context, call *sdk.Call) (sdk.Decision, error) {
				var in struct{ Text string }
				if err := call.Bind(&in); err != nil {
					return sdk.Decision{}, err // an error denies: listeners fail closed
				}
				for _, w := range strings.Fields(strings.ToLower(in.Text)) {
					if slices.Contains(cfg.Forbidden, w) {
						return sdk.Deny("the text holds the forbidden word " + w), nil
					}
				}
				return sdk.Pass(), nil
			},
		})
		return err
	},
}

func main() { sdk.Serve(Plugin) }
