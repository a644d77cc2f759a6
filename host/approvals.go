package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// ApproverPlugin is the name of the host's own approver plugin; it is loaded
// first, so any approver a plugin registers is newer and decides instead.
const ApproverPlugin = "host"

// Question is an approval a client is asked for.
type Question struct {
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Question  string `json:"question"`
	// For is who the call is made for ("local:alice", "user:ann").
	For string `json:"for"`
}

// Asker is a client session that can answer questions, such as a terminal
// or an MCP client that supports elicitation.
type Asker func(ctx context.Context, q Question) (bool, error)

// Approvals routes each Ask to the client that made the call. A client
// registers as a caller name; a call from a caller with no Asker is denied
// with a reason saying an approval was needed.
type Approvals struct {
	// Service holds the requests of the deployment's approval routes: an
	// Ask about a tool a route claims goes there, not to the caller.
	Service *approvals.Service
	// routes are the deployment's approval blocks as last loaded.
	routes func() []deployment.Approval
	// notifier delivers the routes' webhooks (nil in a bare NewApprovals).
	notifier *approvals.Notifier
	// store is the shared store's connections (nil without one).
	store io.Closer

	mu     sync.Mutex
	askers map[string]Asker
	// elicitors are the callers that can answer a plugin's question (see
	// elicit.go).
	elicitors map[string]Elicitor
	seq       atomic.Uint64
}

// NewApprovals returns an empty router.
func NewApprovals() *Approvals {
	return &Approvals{askers: map[string]Asker{}, Service: approvals.New(approvals.Events{})}
}

// Caller returns a fresh caller name for a client session; ask may be nil
// for a client that cannot answer. Call release when the session ends.
func (a *Approvals) Caller(prefix string, ask Asker) (caller string, release func()) {
	caller = prefix + "#" + strconv.FormatUint(a.seq.Add(1), 10)
	if ask != nil {
		a.mu.Lock()
		a.askers[caller] = ask
		a.mu.Unlock()
	}
	return caller, func() {
		a.mu.Lock()
		delete(a.askers, caller)
		a.mu.Unlock()
	}
}

// ErrCannotAsk is the approver's failure when the calling client cannot be
// asked; the pipeline turns it into DENIED.
var ErrCannotAsk = errors.New("approval needed, but the client that made the call cannot answer")

func (a *Approvals) approve(ctx context.Context, e *pipeline.Execution, question string) (bool, error) {
	r, err := a.route(e.Name(), e.AskRoute())
	if err != nil {
		return false, err
	}
	if r != nil {
		return a.askRoute(ctx, e, question, r)
	}
	a.mu.Lock()
	ask := a.askers[e.Caller()]
	a.mu.Unlock()
	if ask == nil {
		return false, fmt.Errorf("%w (caller %s)", ErrCannotAsk, e.Caller())
	}
	return ask(ctx, Question{ID: e.ID(), Tool: e.Name(), Arguments: e.ArgumentsJSON(), Question: question, For: e.Principal().String()})
}

// Plugin is the in-host plugin that registers the router as an approver.
func (a *Approvals) Plugin() kernel.Plugin {
	return kernel.Plugin{
		Name:   ApproverPlugin,
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.SetApprover(a.approve)
			return err
		},
	}
}
