package deployment

import "net/url"

// approvalStore reads the host block's approval_store and
// approval_lease_ttl: where replicas share the approval requests, and how
// long a replica's parked calls outlive it there.
func (p *parser) approvalStore(hs *hostSyntax, h *Host) {
	body, def := hs.Body, hs.DefRange
	if hs.ApprovalStore != nil {
		if u, err := url.Parse(*hs.ApprovalStore); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			p.errorf(valueRange(body, "approval_store", def), "Invalid approval_store", `approval_store is not a Redis URL such as "redis://127.0.0.1:6379/0" (or "rediss://" for TLS).`)
		} else {
			h.ApprovalStore = *hs.ApprovalStore
			h.ApprovalLeaseTTL = DefaultLeaseTTL
		}
	}
	if hs.ApprovalLease == nil {
		return
	}
	r := valueRange(body, "approval_lease_ttl", def)
	if hs.ApprovalStore == nil {
		p.errorf(r, "approval_lease_ttl without a store", "approval_lease_ttl is how long a replica's parked calls outlive it in the shared approval_store; set approval_store too, or leave it out.")
		return
	}
	d := p.duration(body, "approval_lease_ttl", hs.ApprovalLease, DefaultLeaseTTL)
	if d < MinLeaseTTL {
		p.errorf(r, "Invalid approval_lease_ttl", "approval_lease_ttl = %q is less than %s: a replica renews its lease every third of it.", *hs.ApprovalLease, MinLeaseTTL)
		return
	}
	if h.ApprovalStore != "" {
		h.ApprovalLeaseTTL = d
	}
}
