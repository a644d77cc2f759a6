package main

import (
	"context"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// observeWithReceipt is the stage-5 listener: observe, and where the line went. The
// host hands it back to the caller as the call's receipt when the deployment
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
