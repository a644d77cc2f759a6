package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// The plugin's identity, its tool and the service it calls.
const (
	pluginName    = "search"
	pluginVersion = "0.1.0"
	toolName      = "search"
	indexService  = "index"
	indexMethod   = "search"
)

// Config is empty: the tool has nothing of its own to set, since the folder
// and the engine belong to the index plugin.
type Config struct{}

// Limits of a search; the index service allows the same range.
const (
	defaultLimit = 10
	maxLimit     = 100
	// timeout bounds a call: an in-memory search takes milliseconds, so a
	// slower one means the index is stuck and the caller should hear so.
	timeout = 10 * time.Second
)

// parameters is the tool's arguments schema. The host enforces it before the
// tool runs, so execute only checks what a schema cannot say.
const parameters = `{"type":"object","properties":{"q":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["q"],"additionalProperties":false}`

// description is written for a model choosing and calling the tool.
const description = `Full-text search over the indexed documents (a folder of notes and documentation). ` +
	`Returns the best-matching files first. Each hit has "path" (the file's path relative to the indexed folder), ` +
	`"score" (relevance: higher is better, comparable only within one search) and "snippet" (the text around ` +
	`the match, matched words in **bold**). "total" counts every matching file and may exceed the hits returned; ` +
	`raise "limit" (1 to 100, default 10) to see more. ` +
	`Query syntax in "q": plain words match files containing any of them, files with more of them ranking higher; ` +
	`English word forms match ("guards" finds "guard"); "quoted words" match an exact phrase; ` +
	`+word requires a word, -word excludes one; pre* matches a prefix.`

func definition() sdk.Plugin[Config] {
	return sdk.Plugin[Config]{
		Name:    pluginName,
		Version: pluginVersion,
		Inject:  []string{"tools", indexService},
		Apply: func(ctx context.Context, p *sdk.Context, _ Config) error {
			_, err := p.RegisterTool(ctx, searchTool{index: p}.tool())
			return err
		},
	}
}

// serviceCaller is the part of *sdk.Context the tool needs: tests replace it
// with a fake.
type serviceCaller interface {
	CallService(ctx context.Context, service, method string, args any) (json.RawMessage, error)
}

// searchTool is the "search" tool. It takes {"q": string, "limit": int} and
// returns a Result: the index's hits, best first.
type searchTool struct {
	index serviceCaller
}

func (t searchTool) tool() sdk.Tool {
	return sdk.Tool{
		Name:        toolName,
		Description: description,
		Parameters:  parameters,
		ReadOnly:    true,
		Idempotent:  true, // the same query twice reads the same index twice
		Timeout:     timeout,
		Execute:     t.execute,
	}
}

// Args are the tool's arguments, as the index's search method takes them.
type Args struct {
	Q     string `json:"q"`
	Limit int    `json:"limit"`
}

// Result is what the tool returns.
type Result struct {
	// Query is the query as searched, trimmed.
	Query string `json:"query"`
	// Total counts every matching file; Hits are the first of them.
	Total uint64 `json:"total"`
	// Hits are ranked, best first; never null.
	Hits []Hit `json:"hits"`
}

// Hit is one matching file.
type Hit struct {
	Path    string  `json:"path"`
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet"`
}

func (t searchTool) execute(ctx context.Context, call *sdk.Call) (any, error) {
	var args Args
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	// minLength 1 lets " " through; searching for nothing is surely a mistake.
	args.Q = strings.TrimSpace(args.Q)
	if args.Q == "" {
		return nil, errors.New(`"q" is blank: give the words to search for`)
	}
	switch {
	case args.Limit == 0:
		args.Limit = defaultLimit
	case args.Limit < 0 || args.Limit > maxLimit:
		return nil, fmt.Errorf(`"limit" is %d; it must be between 1 and %d`, args.Limit, maxLimit)
	}
	raw, err := t.index.CallService(ctx, indexService, indexMethod, args)
	if err != nil {
		return nil, err
	}
	return decodeResult(raw, args)
}

// decodeResult reads the index's answer. Unknown fields are ignored so that
// a newer index can add some; a missing "hits" means the provider is not the
// index this tool knows, which is worth saying rather than answering
// "nothing found".
func decodeResult(raw json.RawMessage, args Args) (Result, error) {
	var got struct {
		Hits  *[]Hit `json:"hits"`
		Total uint64 `json:"total"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		return Result{}, fmt.Errorf("%s.%s returned an unexpected result: %w", indexService, indexMethod, err)
	}
	if got.Hits == nil {
		return Result{}, fmt.Errorf(`%s.%s returned no "hits": %.200s`, indexService, indexMethod, raw)
	}
	hits := *got.Hits
	if len(hits) > args.Limit {
		hits = hits[:args.Limit] // the caller asked for at most limit
	}
	if hits == nil {
		hits = []Hit{}
	}
	return Result{Query: args.Q, Total: max(got.Total, uint64(len(hits))), Hits: hits}, nil
}

var _ serviceCaller = (*sdk.Context)(nil)
