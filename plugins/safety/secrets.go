package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/secrets"
)

// The secrets block's modes.
const (
	argumentsDeny = "deny"
	argumentsAsk  = "ask"
	resultsRedact = "redact"
	resultsBlock  = "block"
	modeOff       = "off"
)

// secretsName names the guard and listeners of the secrets block in audits
// and reasons.
const secretsName = "secrets"

// secretsPolicy is a compiled secrets block.
type secretsPolicy struct {
	scan      *secrets.Scanner
	arguments string // deny, ask or off
	results   string // redact, block or off
}

// compileSecrets checks the secrets blocks (there may be one) and returns
// the policy, nil when there is none.
func compileSecrets(blocks []Secrets) (*secretsPolicy, []string) {
	var problems []string
	if len(blocks) > 1 {
		problems = append(problems, fmt.Sprintf("secrets: %d blocks; write one", len(blocks)))
	}
	if len(blocks) == 0 {
		return nil, problems
	}
	b := blocks[0]
	p := &secretsPolicy{arguments: b.Arguments, results: b.Results}
	if p.arguments == "" {
		p.arguments = argumentsDeny
	}
	if p.results == "" {
		p.results = resultsRedact
	}
	switch p.arguments {
	case argumentsDeny, argumentsAsk, modeOff:
	default:
		problems = append(problems, fmt.Sprintf("secrets: arguments %q is not one of deny, ask, off", b.Arguments))
	}
	switch p.results {
	case resultsRedact, resultsBlock, modeOff:
	default:
		problems = append(problems, fmt.Sprintf("secrets: results %q is not one of redact, block, off", b.Results))
	}
	for i, a := range b.Allow {
		if a == "" {
			problems = append(problems, fmt.Sprintf("secrets: allow[%d] is empty", i))
		}
	}
	p.scan = secrets.New(b.Allow)
	return p, problems
}

// argumentHits returns the credentials in a call's arguments. An error (the
// arguments are not JSON, which the host never sends) fails closed where
// it is used.
func (p *secretsPolicy) argumentHits(call *sdk.Call) ([]secrets.Hit, error) {
	hits, err := p.scan.FindJSON(call.Arguments)
	if err != nil {
		return nil, fmt.Errorf("secrets: cannot inspect the arguments of %s: %w", call.Name, err)
	}
	return hits, nil
}

// guard is arguments = "deny" as a stage-2 guard: no stage-1 listener, the
// approver included, can let a credential through.
func (p *secretsPolicy) guard() sdk.Guard {
	return sdk.Guard{Name: secretsName, Check: func(_ context.Context, call *sdk.Call) (string, error) {
		if call.Visibility() {
			return "", nil // arguments without a credential pass
		}
		hits, err := p.argumentHits(call)
		if err != nil || len(hits) == 0 {
			return "", err
		}
		return argumentsReason(hits), nil
	}}
}

// argumentsReason names what was found and where, never the credential.
func argumentsReason(hits []secrets.Hit) string {
	return fmt.Sprintf("denied by safety rule %q: the arguments carry a credential (%s)", secretsName, describe(hits))
}

// describe lists each kind once, with the arguments it was found in:
// "aws-access-key in /content, github-token in /files/0/body".
func describe(hits []secrets.Hit) string {
	var order []string
	where := map[string][]string{}
	for _, h := range hits {
		ptr := h.Pointer
		if ptr == "" {
			ptr = "/"
		}
		if _, ok := where[h.Kind]; !ok {
			order = append(order, h.Kind)
		}
		if !slices.Contains(where[h.Kind], ptr) {
			where[h.Kind] = append(where[h.Kind], ptr)
		}
	}
	parts := make([]string, len(order))
	for i, k := range order {
		ptrs := where[k]
		if len(ptrs) > 3 {
			ptrs = append(ptrs[:3:3], "…")
		}
		parts[i] = k + " in " + strings.Join(ptrs, ", ")
	}
	return strings.Join(parts, "; ")
}

// review is the stage-4 filter: results = "redact" replaces each credential
// in the result's strings with a marker naming its kind, results = "block"
// blocks a result that carries one. A tool's error message cannot be
// replaced (a replacement keeps the error as it was), so one that carries a
// credential is blocked in either mode.
func (p *secretsPolicy) review(_ context.Context, call *sdk.Call, out sdk.Outcome) (sdk.Review, error) {
	if out.Error != nil {
		if kinds := kindsIn(p.scan.Find(out.Error.Message)); len(kinds) > 0 {
			return sdk.Block(fmt.Sprintf("safety rule %q: the error of %s carries a credential (%s)", secretsName, call.Name, strings.Join(kinds, ", "))), nil
		}
	}
	if len(out.Value) == 0 {
		return sdk.PassReview(), nil
	}
	if p.results == resultsBlock {
		hits, err := p.scan.FindJSON(out.Value)
		if err != nil {
			return sdk.Review{}, resultError(call, err)
		}
		if len(hits) == 0 {
			return sdk.PassReview(), nil
		}
		return sdk.Block(fmt.Sprintf("safety rule %q: the result of %s carries a credential (%s)", secretsName, call.Name, describe(hits))), nil
	}
	redacted, hits, err := p.scan.RedactJSON(out.Value)
	if err != nil {
		return sdk.Review{}, resultError(call, err)
	}
	if len(hits) == 0 {
		return sdk.PassReview(), nil
	}
	return sdk.Replace(json.RawMessage(redacted)), nil
}

// resultError fails the review closed: the host blocks the result.
func resultError(call *sdk.Call, err error) error {
	return errors.New("secrets: cannot inspect the result of " + call.Name + ": " + err.Error())
}

func kindsIn(found []secrets.Finding) []string {
	var kinds []string
	for _, f := range found {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	return kinds
}
