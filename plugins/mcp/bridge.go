package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// bridge is one server's session and the tools registered for it.
//
// Lifecycle:
//  1. start connects (dial, which Prepare may have done already), lists the
//     server's tools and registers them (begin);
//  2. a notifications/tools/list_changed wakes the sync loop, which lists
//     again and registers, disposes or replaces what changed;
//  3. when the session ends without close (the server exited, its HTTP
//     endpoint went away), new calls fail at once naming the cause, the
//     calls in flight return, and onGone runs: the plugin then exits so that
//     the host's supervision restarts it under its restart policy;
//  4. close ends the session; for stdio the SDK closes the server's stdin,
//     then signals it.
type bridge struct {
	set   *settings
	log   hclog.Logger
	batch batchFunc
	// onGone runs once when the server went away by itself.
	onGone func(cause error)
	// transport reaches the server; the settings' transport unless a test
	// sets another before start.
	transport func() (mcp.Transport, *stderrRelay, error)

	cs *mcp.ClientSession
	// hot sends tools/call to a stdio server without the SDK's decoders
	// (hotclient.go); nil for a server reached by url.
	hot   *hotClient
	relay *stderrRelay
	// web is the HTTP client of a server reached by url: its idle
	// connections are the bridge's own (session.go), closed with it.
	web *http.Client
	// listed is what prelist found, until begin registers it.
	listed map[string]sdk.Tool
	// notify tells the host a resource changed (resources.go); guarded by
	// mu, set by Apply once it has the host.
	notify func(ctx context.Context, uri string) error
	// resourcesHeld are the resources and templates held at the last
	// list, by pin key (resourcepins.go); guarded by mu.
	resourcesHeld map[string]string

	// base is cancelled by close; the sync loop and re-registrations run
	// under it.
	base   context.Context
	cancel context.CancelFunc
	poke   chan struct{}
	wg     sync.WaitGroup

	// session is the token of a principal who signed in, for a server
	// that refuses the session without one; signMu orders sign-ins
	// (signin.go).
	session sessionToken
	signMu  sync.Mutex

	// mu guards cs once started, tools, refused, gone and closing; calls
	// counts calls in flight.
	mu      sync.Mutex
	tools   map[string]*bridged // by the server's tool name
	refused map[string]string   // registered name → why the host refused it (logged once)
	gone    error
	closing bool
	calls   sync.WaitGroup
	// live counts the calls in flight by call id, and ask puts a server's
	// question to a call's client (elicit.go); both under mu.
	live map[string]int
	ask  askFunc
	// idle gives memory back once calls stop (idlemem.go).
	idle idleMemory
	// dead is closed when the session ended, whatever the reason;
	// deadCtx is cancelled then too, to end the calls still waiting.
	dead     chan struct{}
	deadCtx  context.Context
	markDead context.CancelFunc
}

// bridged is one registered tool.
type bridged struct {
	spec sdk.Tool
	reg  registration
}

func newBridge(set *settings, log hclog.Logger, batch batchFunc, onGone func(error)) *bridge {
	base, cancel := context.WithCancel(context.Background())
	deadCtx, markDead := context.WithCancel(context.Background())
	b := &bridge{
		deadCtx: deadCtx, markDead: markDead,
		set: set, log: log, batch: batch, onGone: onGone,
		base: base, cancel: cancel,
		poke:  make(chan struct{}, 1),
		tools: map[string]*bridged{},
		dead:  make(chan struct{}),
	}
	b.transport = func() (mcp.Transport, *stderrRelay, error) {
		t, relay, err := transport(set, log)
		if ht := headerOf(t); ht != nil {
			// Once a principal signs in, the session's requests carry
			// their token (signin.go).
			ht.session = &b.session
		}
		return t, relay, err
	}
	return b
}

// start connects and registers the server's tools under ctx (the host's
// apply step).
func (b *bridge) start(ctx context.Context) error {
	if err := b.dial(ctx); err != nil {
		var si *errSignIn
		if errors.As(err, &si) {
			return b.awaitSignIn(ctx, si.err)
		}
		return err
	}
	return b.begin(ctx)
}

// dial starts the server (or reaches its endpoint) and opens the session;
// on failure the bridge is spent. Until begin, nothing is registered and
// the session is not watched.
func (b *bridge) dial(ctx context.Context) error {
	t, relay, err := b.transport()
	if err != nil {
		b.cancel()
		return err
	}
	b.relay = relay
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		b.web = st.HTTPClient
	}
	cs, err := connect(ctx, b.set, t, relay, b.listChanged, b.resourceUpdated, b.elicit)
	if err != nil {
		// A server that wants a token for the session itself is signed
		// in to later (signin.go): the bridge is not spent.
		signIn := b.refusedUnauthenticated(t)
		if !signIn {
			b.cancel()
		}
		if relay != nil {
			_ = relay.Close()
		}
		if b.web != nil {
			b.web.CloseIdleConnections()
			b.web = nil
		}
		if signIn {
			return &errSignIn{err}
		}
		return err
	}
	b.mu.Lock()
	b.cs = cs
	if ct, ok := t.(*commandTransport); ok {
		b.hot = ct.hot
	}
	b.mu.Unlock()
	return nil
}

// prelist lists the server's tools ahead of begin (Prepare): begin then
// registers them without asking again. A failure leaves begin to list.
func (b *bridge) prelist(ctx context.Context) {
	if want, err := b.list(ctx); err == nil {
		b.listed = want
	}
}

// begin watches the dialled session, lists the server's tools (unless
// prelist did) and registers them, then follows the server's list changes:
// one that came since prelist is still pending in poke.
func (b *bridge) begin(ctx context.Context) error {
	b.wg.Add(1)
	go b.watch()
	first := b.sync
	if want := b.listed; want != nil {
		b.listed = nil
		first = func(ctx context.Context) error { return b.register(ctx, want) }
	}
	if err := first(ctx); err != nil {
		b.close()
		return err
	}
	b.wg.Add(1)
	go b.follow()
	b.wg.Add(1)
	go b.releaseWhenIdle()
	return nil
}

func (b *bridge) listChanged() {
	select {
	case b.poke <- struct{}{}:
	default:
	}
}

// follow re-lists on every list_changed. Notifications that arrive while a
// sync runs fold into one more sync.
func (b *bridge) follow() {
	defer b.wg.Done()
	for {
		select {
		case <-b.base.Done():
			return
		case <-b.dead:
			return
		case <-b.poke:
			if err := b.sync(b.base); err != nil && b.base.Err() == nil {
				b.log.Warn("tools/list after list_changed failed; keeping the tools as they were", "error", err)
			}
			// Coalesce: whatever arrives until the interval has passed
			// makes one more sync, not one each.
			t := time.NewTimer(b.set.limits.listInterval)
			select {
			case <-b.base.Done():
				t.Stop()
				return
			case <-b.dead:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// sync makes the registered tools those the server lists now: new tools are
// registered, tools gone are disposed, changed tools are disposed and
// registered again, all in one batch (see apply); unchanged tools are
// untouched. A tool the host refuses (its name is taken, its schema is not
// one) is logged and left out; the others are still bridged.
func (b *bridge) sync(ctx context.Context) error {
	want, err := b.list(ctx)
	if err != nil {
		return err
	}
	return b.register(ctx, want)
}

// register makes the registered tools want: adds, replaces and disposes
// what differs, in one batch.
func (b *bridge) register(ctx context.Context, want map[string]sdk.Tool) error {
	added, disposed, err := b.apply(ctx, want)
	if err != nil {
		return fmt.Errorf("registering the tools of the MCP server %s: %w", b.set.describe(), err)
	}
	if added > 0 || disposed > 0 {
		b.log.Info("tools synced", "server", b.set.describe(), "tools", len(want), "registered", added, "disposed", disposed)
	}
	return nil
}

// call runs tools/call. Cancelling ctx (the pipeline call was cancelled or
// timed out) makes the SDK send notifications/cancelled to the server.
func (b *bridge) call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	b.mu.Lock()
	if b.gone != nil {
		err := b.gone
		b.mu.Unlock()
		return nil, err
	}
	b.calls.Add(1)
	b.mu.Unlock()
	defer b.calls.Done()
	b.idle.called()

	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	// A call waiting for its answer when the session ends must end too:
	// the SDK does not always fail it when the connection closes under it.
	ctx, err := b.set.withCallToken(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.deadCtx, cancel)()
	// A span for the server's part of the call, whose trace context goes
	// to the server in _meta (traceparent, tracestate), so that a server
	// that traces joins the call's trace.
	cctx, span := otel.Tracer("plugkit/mcp").Start(cctx, "mcp tools/call", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcp.tool", name)))
	defer span.End()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if span.SpanContext().IsValid() {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(cctx, carrier)
		params.Meta = mcp.Meta{}
		for k, v := range carrier {
			params.Meta[k] = v
		}
	}
	var res *mcp.CallToolResult
	if ok, modern := b.hotServes(); ok {
		res, err = b.hot.call(cctx, params, modern)
		if err == nil && callNeedsSDK(res) {
			// The server asks the client questions first: the SDK's
			// client answers them and retries the call.
			res, err = b.cs.CallTool(cctx, params)
		}
	} else {
		res, err = b.cs.CallTool(cctx, params)
	}
	if err != nil {
		span.SetStatus(codes.Error, "tools/call failed")
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if refusedToken(ctx) {
			return nil, fmt.Errorf("%s: tools/call %s on the MCP server %s", wire.UpstreamRefused, name, b.set.describe())
		}
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			// Not the server's answer but the transport's (EOF, a closed
			// connection): if the session ended under the call, report
			// why, once the watch has found out (promptly: the pipe is
			// closed).
			select {
			case <-b.dead:
			case <-time.After(time.Second):
			}
			b.mu.Lock()
			gone := b.gone
			b.mu.Unlock()
			if gone != nil {
				return nil, gone
			}
		}
		return nil, fmt.Errorf("tools/call %s on the MCP server %s: %w", name, b.set.describe(), err)
	}
	if res.IsError {
		span.SetStatus(codes.Error, "isError")
		return nil, errors.New(errorText(res))
	}
	return resultValue(res)
}

// watch waits for the session to end. An end that close did not ask for
// means the server went away.
func (b *bridge) watch() {
	defer b.wg.Done()
	err := b.cs.Wait()
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	var cause error
	if !closing {
		how := "the session ended"
		if b.relay != nil {
			if c := b.relay.exitCause(500 * time.Millisecond); c != "" {
				how = c
			}
		} else if err != nil {
			how = err.Error()
		}
		cause = fmt.Errorf("%w: %s: %s; the plugin restarts to start it again", errServerGone, b.set.describe(), how)
	}
	b.mu.Lock()
	if b.gone == nil {
		b.gone = cause
		if cause == nil {
			b.gone = errors.New("the MCP bridge is stopping")
		}
	}
	close(b.dead)
	b.markDead()
	b.mu.Unlock()
	if closing {
		return
	}
	b.log.Error("MCP server went away", "server", b.set.describe(), "cause", cause)
	// Closing our end fails the calls still waiting for an answer (with
	// the cause, see call) and reaps a stdio server's launcher.
	_ = b.cs.Close()
	b.onGone(cause)
}

// drain waits (at most wait) for the calls in flight to return.
func (b *bridge) drain(wait time.Duration) {
	done := make(chan struct{})
	go func() {
		b.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// close ends the session and the sync loop. It does not dispose the tools:
// the host undoes a plugin's registrations itself when it stops or reloads it.
func (b *bridge) close() {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	b.cancel()
	b.mu.Lock()
	cs := b.cs
	b.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if b.relay != nil {
		_ = b.relay.Close()
	}
	b.wg.Wait()
	b.mu.Lock()
	web := b.web
	b.mu.Unlock()
	if web != nil {
		web.CloseIdleConnections()
	}
}
