package deployment

import (
	"math"
	"net/url"
)

// policy checks the host block's policy block: the built-in policies
// (timeout, concurrency, retry, per-principal limits), over the defaults
// in pol.
func (p *parser) policy(ps *policySyntax, pol Policy) Policy {
	p.names(ps.Body, ps, "the policy block")
	if ps.Timeout != nil {
		pol.Timeout = *ps.Timeout
	}
	pol.Concurrency = p.count(ps.Body, "concurrency", ps.Concurrency, 0, 0)
	pol.PerTool = p.count(ps.Body, "per_tool", ps.PerTool, 0, 0)
	if rs := ps.Retry; rs != nil {
		p.names(rs.Body, rs, "the retry block")
		r := &Retry{Backoff: defaultRetryBackoff, MaxBackoff: defaultRetryMaxBackoff}
		r.Attempts = p.count(rs.Body, "attempts", rs.Attempts, 1, defaultRetryAttempts)
		r.Backoff = p.duration(rs.Body, "backoff", rs.Backoff, r.Backoff)
		r.MaxBackoff = p.duration(rs.Body, "max_backoff", rs.MaxBackoff, r.MaxBackoff)
		p.backoffOrder(rs.Body, rs.DefRange, r.Backoff, r.MaxBackoff)
		pol.Retry = r
	}
	if ps := ps.PerPrincipal; ps != nil {
		p.names(ps.Body, ps, "the per_principal block")
		pp := &PerPrincipal{}
		if ps.Rate != nil {
			if r := *ps.Rate; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
				p.errorf(valueRange(ps.Body, "rate", ps.DefRange), "Invalid rate", "rate %v is not a number of calls a second (0 or more).", r)
			} else {
				pp.Rate = r
			}
		}
		pp.Burst = p.count(ps.Body, "burst", ps.Burst, 0, 0)
		pp.Concurrency = p.count(ps.Body, "concurrency", ps.Concurrency, 0, 0)
		pp.OnStoreError = "deny"
		if ps.Store != nil {
			if u, err := url.Parse(*ps.Store); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
				p.errorf(valueRange(ps.Body, "store", ps.DefRange), "Invalid store", `store is not a Redis URL such as "redis://127.0.0.1:6379/0" (or "rediss://" for TLS).`)
			} else {
				pp.Store = *ps.Store
			}
		}
		if ps.OnStoreError != nil {
			switch v := *ps.OnStoreError; v {
			case "deny", "local":
				pp.OnStoreError = v
			default:
				p.errorf(valueRange(ps.Body, "on_store_error", ps.DefRange), "Invalid on_store_error", `on_store_error = %q; want "deny" (calls are denied while the store cannot be reached) or "local" (each replica keeps its own limits meanwhile).`, v)
			}
			if ps.Store == nil {
				p.errorf(valueRange(ps.Body, "on_store_error", ps.DefRange), "on_store_error without a store", "on_store_error says what happens when the shared store cannot be reached; set store too, or leave it out.")
			}
		}
		if ps.LeaseTTL != nil {
			pp.LeaseTTL = p.leaseTTL(ps)
		} else if pp.Store != "" {
			pp.LeaseTTL = DefaultLeaseTTL
		}
		pol.PerPrincipal = pp
	}
	return pol
}
