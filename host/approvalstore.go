package host

import (
	"crypto/rand"
	"io"
	"os"
	"strings"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/approvals/redisstore"
	"github.com/plugkit-go/plugkit/deployment"
)

// approvalService is the service of the routes' requests: in this process,
// or, with the host block's approval_store, in Redis shared by every
// replica (closer then closes its connections).
func approvalService(hb deployment.Host, ev approvals.Events) (*approvals.Service, io.Closer, error) {
	if hb.ApprovalStore == "" {
		return approvals.New(ev), nil, nil
	}
	st, err := redisstore.Open(hb.ApprovalStore)
	if err != nil {
		return nil, nil, err
	}
	return approvals.NewShared(ev, st, holderName(), hb.ApprovalLeaseTTL), st, nil
}

// holderName names this process among the replicas: its host name, which
// says where the call is, and a random part, as a restarted process (a
// container's pid 1 again) must not renew the lease of the one before.
func holderName() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "host"
	}
	return name + "-" + strings.ToLower(rand.Text()[:6])
}

// closeApprovals stops the service (with a store, releasing this
// replica's lease) and closes its store.
func (a *Approvals) closeApprovals() {
	if a.Service != nil {
		a.Service.Close()
	}
	if a.store != nil {
		_ = a.store.Close()
	}
}
