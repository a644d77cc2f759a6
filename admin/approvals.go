package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/host"
)

// ApprovalRequest is a request of an approval route, as
// GET /v1/approvals lists them.
type ApprovalRequest = approvals.Request

// Waiting is a call event: the call waits for the approvers of a route.
type Waiting = host.Waiting

// DecideRequest is POST /v1/approvals/{id}/approve or /deny: the answer
// of whoever sent it (the socket's peer), with a reason and, optionally,
// the hash of the arguments the answer is for.
type DecideRequest struct {
	Reason     string `json:"reason,omitempty"`
	ArgsSHA256 string `json:"args_sha256,omitempty"`
}

// DecideAnswer is what an answer did: the request as it is now, and why
// the answer did not count when it did not.
type DecideAnswer struct {
	Request ApprovalRequest `json:"request"`
	Error   string          `json:"error,omitempty"`
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) { s.decide(w, r, true) }

func (s *Server) deny(w http.ResponseWriter, r *http.Request) { s.decide(w, r, false) }

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	reqs, err := s.c.Host.Approvals.Service.List()
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, Message{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, reqs)
}

func (s *Server) showApproval(w http.ResponseWriter, r *http.Request) {
	req, err := s.c.Host.Approvals.Service.Get(r.PathValue("id"))
	switch {
	case errors.Is(err, approvals.ErrNotFound):
		writeJSON(w, http.StatusNotFound, Message{Error: "approvals: no request " + r.PathValue("id")})
		return
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, Message{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// decide answers a request as the socket's peer: the OS user whose
// process sent it. The service refuses the call's own principal and
// anyone the route does not name.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, approve bool) {
	var d DecideRequest
	if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: "approvals: bad request: " + err.Error()})
		return
	}
	by, ok := peerPrincipal(r.Context())
	if !ok {
		writeJSON(w, http.StatusForbidden, Message{Error: "approvals: refused: the admin socket cannot tell who is answering"})
		return
	}
	req, err := s.c.Host.Approvals.Service.Decide(r.PathValue("id"), by, approve, d.Reason, d.ArgsSHA256)
	switch {
	case errors.Is(err, approvals.ErrNotFound):
		writeJSON(w, http.StatusNotFound, Message{Error: "approvals: " + err.Error()})
	case err != nil && req.ID == "":
		// The store failed: nothing was answered.
		writeJSON(w, http.StatusServiceUnavailable, Message{Error: err.Error()})
	case err != nil:
		writeJSON(w, http.StatusConflict, DecideAnswer{Request: req, Error: "approvals: refused: " + err.Error()})
	default:
		writeJSON(w, http.StatusOK, DecideAnswer{Request: req})
	}
}

// Approvals lists the approval requests, pending ones first.
func (c *Client) Approvals(ctx context.Context) ([]ApprovalRequest, error) {
	var out []ApprovalRequest
	err := c.get(ctx, "/v1/approvals", &out)
	return out, err
}

// Approval returns one approval request.
func (c *Client) Approval(ctx context.Context, id string) (ApprovalRequest, error) {
	var out ApprovalRequest
	err := c.get(ctx, "/v1/approvals/"+url.PathEscape(id), &out)
	return out, err
}

// Decide approves or denies request id as this process's user.
func (c *Client) Decide(ctx context.Context, id string, approve bool, d DecideRequest) (ApprovalRequest, error) {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	resp, err := c.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/"+verb, d)
	if err != nil {
		return ApprovalRequest{}, err
	}
	defer resp.Body.Close()
	var a DecideAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return ApprovalRequest{}, err
	}
	return a.Request, nil
}
