// Package approvals holds the Asks that a deployment routes to principals
// other than the caller (an approval block): each parked call's request,
// bound to its tool, the hash of its canonical arguments, its principal and
// its route, until a quorum of distinct approvers approves it, one denies
// it, its route's timeout passes or its caller gives up. It enforces the
// separation of duties: an approver must match the route's selectors and
// must not be the call's own principal. The host's approver, the admin API
// and the console all go through one Service.
package approvals
