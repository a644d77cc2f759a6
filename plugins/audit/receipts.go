package main

import (
	"context"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// observeWithReceipt is the stage-5 listener: one line per result,
// whatever the outcome (it cannot fail the call, so a line it cannot write
// is logged), and where the line went.
//
// The host counts a result as written once this returned for it (and the
// rest of its batch). So a result that cannot be written yet because
// another process holds the log waits here, and one that this process will
// never write because the log was closed while it waited stays here until
// the stream ends (the process is ending): unacknowledged, the host of a
// critical plugin sends it again to the next process.
//
// The line's place is handed back to the caller as the call's receipt when the deployment
// asks for receipts; it reaches the host with the acknowledgement of the
// batch the result came in, so it names a line that is written (and, with
// fsync = always, on disk).
func (a *auditor) observeWithReceipt(ctx context.Context, call *sdk.Call, r sdk.ToolResult) (sdk.Receipt, bool) {
	a.order.Lock()
	a.written = auditlog.Tip{}
	hold := a.observeInOrder(ctx, call, r)
	w := a.written
	a.order.Unlock()
	if hold {
		<-ctx.Done()
	}
	return sdk.Receipt{Seq: w.Seq, Hash: w.Hash}, w.Seq > 0
}
