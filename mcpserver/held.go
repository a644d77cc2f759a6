package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
)

// progressEvery is how often a call held for an approval route's
// approvers tells its client it is still waiting: well inside the request
// timeouts clients reset on progress (the TypeScript SDK's default is 60s).
const progressEvery = 10 * time.Second

// held sends progress notifications for a call held for an approval
// route's approvers, when the request asked for progress (a
// progressToken): one at once, then one every progressEvery, each saying
// whom the call waits for. A request without a token gets none (the
// protocol sends progress only to a request that asked for it).
type held struct {
	w     host.Waiting
	since time.Time
	n     float64
	tick  *time.Ticker
}

// hold starts the notifications of w; nil when the request has no token.
func hold(ctx context.Context, req *mcp.CallToolRequest, w host.Waiting) *held {
	if req.Params.GetProgressToken() == nil {
		return nil
	}
	h := &held{w: w, since: time.Now(), tick: time.NewTicker(progressEvery)}
	h.notify(ctx, req)
	return h
}

// ticks is the channel of the next notification; nil (never ready) when
// there is none to send.
func (h *held) ticks() <-chan time.Time {
	if h == nil {
		return nil
	}
	return h.tick.C
}

func (h *held) notify(ctx context.Context, req *mcp.CallToolRequest) {
	h.n++
	msg := fmt.Sprintf("waiting for approval by %s (request %s, %s so far, until %s)", h.w.Who, h.w.Request,
		time.Since(h.since).Round(time.Second), h.w.Expires.UTC().Format(time.RFC3339))
	// A notification that cannot be sent (the client went away) changes
	// nothing: the request's cancellation ends the call.
	_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: h.n, Message: msg})
}

func (h *held) stop() {
	if h != nil {
		h.tick.Stop()
	}
}
