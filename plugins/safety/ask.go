package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// askDestructive is the ask_destructive filter: Ask before a destructive
// tool, Pass (no opinion, the chain goes on) otherwise. It reads the
// descriptor the host attaches to the call, so it covers tools registered
// after it by any plugin. A filter, not a wrapper: it needs one RPC and
// never has to see what the rest of the chain decided.
func askDestructive(_ context.Context, call *sdk.Call) (sdk.Decision, error) {
	if !call.Tool.Destructive {
		return sdk.Pass(), nil
	}
	return sdk.Ask(call.Name + " is destructive: allow this call? arguments: " + briefArguments(call.Arguments)), nil
}

// briefArguments renders arguments for a question a person reads: each
// value cut to a short length (a file's whole content would drown the path
// next to it), the whole cut again, keys sorted so that the same call
// always reads the same.
func briefArguments(raw json.RawMessage) string {
	const perValue, total = 80, 400
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil || args == nil {
		return brief(compact(raw), total)
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + brief(compact(args[k]), perValue)
	}
	return brief("{"+strings.Join(parts, ", ")+"}", total)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
