package main

import (
	"context"
	"errors"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// Head is what the audit_head tool answers: where the log's chain ends.
type Head struct {
	Path string `json:"path"`
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// headTool publishes the log's head, so that an operator or a monitor can
// keep it somewhere the log's writer cannot reach: `audit verify
// --expect-head HASH` later shows the log still holds that line, which the
// chain alone cannot (a log cut short at a line boundary, or rewritten and
// rechained, verifies).
func headTool(a *auditor) sdk.Tool {
	return sdk.Tool{
		Name: "audit_head",
		Description: "The audit log's head: the seq and hash of its last line. Keep the hash elsewhere; " +
			"`audit verify --expect-head HASH FILE` later checks the log still holds that line. " +
			"Results are written as they arrive, so the head may not include calls that just ended, this one included.",
		ReadOnly:   true,
		Idempotent: true,
		Execute:    func(context.Context, *sdk.Call) (any, error) { return a.head() },
	}
}

func (a *auditor) head() (Head, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.file != nil:
		tip := a.file.tip()
		return Head{Path: a.file.path, Seq: tip.Seq, Hash: tip.Hash}, nil
	case a.pending != nil:
		return Head{}, errors.New("the audit log is not open yet: another process (the one before a reload) still holds it")
	case a.failed != nil:
		return Head{}, a.failed
	}
	return Head{}, errors.New("the audit log is not open")
}
