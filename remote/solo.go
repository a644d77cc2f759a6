package remote

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// Retry alone: a call's arguments that crash a critical plugin's
// pre-execute filter (stage 1) must not be able to spend its restart
// budget, after which every call is DENIED. When the process dies during
// such a call, the call waits for the next process and asks the same
// filter again with no other stage-1 call of the plugin in flight. If the
// process dies again, the arguments did it: the call is DENIED, neither
// exit is counted toward the restart budget (the first is taken back, the
// second never counted), and the same arguments to the same tool are
// denied from then on without being sent. Calls that only shared the
// first crash are served by their retry. While a retry alone runs (up to
// the listener timeout), the plugin's other stage-1 calls wait for it.
//
// Not covered: wrapping pre-execute listeners and guards (a started guard
// of one call may be waited for only after another of its guards, so a
// retry alone could wait for the call itself), and the plugin's other
// calls (tools, later stages, results), which are not held during the
// retry.

// soloGate lets ordinary stage-1 calls of one plugin run together, and a
// retry alone run with none of them in flight. A retry waiting for its turn
// keeps new calls out, so that traffic cannot starve it; an ordinary call
// holds the gate only for its own RPC, never while it waits for another
// entry, so this cannot deadlock.
type soloGate struct {
	mu       sync.Mutex
	inflight int           // ordinary calls in their RPC
	solo     bool          // a retry alone holds the plugin
	waiting  int           // retries alone waiting for their turn
	changed  chan struct{} // closed and replaced on every change
}

// waitLocked waits, with mu released, for the next change or ctx's end.
func (g *soloGate) waitLocked(ctx context.Context) error {
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	ch := g.changed
	g.mu.Unlock()
	defer g.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *soloGate) broadcastLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// enter admits an ordinary call; leave ends it.
func (g *soloGate) enter(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.solo || g.waiting > 0 {
		if err := g.waitLocked(ctx); err != nil {
			return err
		}
	}
	g.inflight++
	return nil
}

func (g *soloGate) leave() {
	g.mu.Lock()
	g.inflight--
	g.broadcastLocked()
	g.mu.Unlock()
}

// lock admits a retry alone once no other call is in flight; unlock ends it.
func (g *soloGate) lock(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting++
	for g.solo || g.inflight > 0 {
		if err := g.waitLocked(ctx); err != nil {
			g.waiting--
			g.broadcastLocked()
			return err
		}
	}
	g.waiting--
	g.solo = true
	return nil
}

func (g *soloGate) unlock() {
	g.mu.Lock()
	g.solo = false
	g.broadcastLocked()
	g.mu.Unlock()
}

// poisonMax bounds the arguments remembered as crashing a plugin alone;
// past it the oldest are forgotten (such a call is then retried alone again).
const poisonMax = 1024

// poisonKey names a call's tool and arguments.
func poisonKey(e *pipeline.Execution) [32]byte {
	h := sha256.New()
	h.Write([]byte(e.Name()))
	h.Write([]byte{0})
	h.Write([]byte(e.ArgumentsJSON()))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// poisoned says whether these arguments crashed the plugin alone before.
func (mp *managed) poisoned(k [32]byte) bool {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	_, ok := mp.poison[k]
	return ok
}

// poisonedCall is poisoned for e's arguments; they are hashed only when
// some are remembered, so that ordinary calls do not pay for it.
func (mp *managed) poisonedCall(e *pipeline.Execution) bool {
	mp.mu.Lock()
	none := len(mp.poison) == 0
	mp.mu.Unlock()
	return !none && mp.poisoned(poisonKey(e))
}

func (mp *managed) addPoison(k [32]byte) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if _, ok := mp.poison[k]; ok {
		return
	}
	if mp.poison == nil {
		mp.poison = map[[32]byte]struct{}{}
	}
	if len(mp.poisonOrder) >= poisonMax {
		delete(mp.poison, mp.poisonOrder[0])
		mp.poisonOrder = mp.poisonOrder[1:]
	}
	mp.poison[k] = struct{}{}
	mp.poisonOrder = append(mp.poisonOrder, k)
}

// errPoison is the error of a call whose arguments crashed a critical
// plugin's listener alone; stage 1 denies the call with it.
func (mp *managed) errPoison(again bool) error {
	name, _ := mp.specNow()
	if again {
		return fmt.Errorf("plugin %s: this call's arguments crashed its pre-execute listener when retried alone before; denied without asking it", name)
	}
	return fmt.Errorf("plugin %s: this call's arguments crashed its pre-execute listener twice, the second time alone; denied, and neither exit counts toward its restart budget", name)
}

// specNow is the plugin's name and restart backoff cap, read under mu (a
// reload replaces its spec).
func (mp *managed) specNow() (string, time.Duration) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	return mp.spec.Name, mp.spec.Restart.MaxBackoff
}

// refund takes back the crash counted for the process dead, whose call's
// arguments have now crashed the next process alone: the first crash was
// theirs too, or else varied crashing arguments could still spend the
// budget one counted crash each. That restart stays in the plugin's count
// (Status.Restarts), which says what happened; only the budget forgets it.
func (mp *managed) refund(dead *instance) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if dead.crashedAt.IsZero() {
		return // not counted (yet, or at all), or refunded already
	}
	if i := slices.Index(mp.crashes, dead.crashedAt); i >= 0 {
		mp.crashes = slices.Delete(mp.crashes, i, i+1)
	}
	dead.crashedAt = time.Time{}
}

// activatedCh is closed the next time the plugin turns ACTIVE or FAILED.
func (mp *managed) activatedCh() <-chan struct{} {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.activated == nil {
		mp.activated = make(chan struct{})
	}
	return mp.activated
}

func (mp *managed) signalState() {
	mp.mu.Lock()
	if mp.activated != nil {
		close(mp.activated)
		mp.activated = nil
	}
	mp.mu.Unlock()
}

// serving is the process of the plugin's ACTIVE version, nil when none;
// failed says it is FAILED, and will not come back by itself. (Between
// versions the plugin may have no scope for a moment: that is waited out.)
func (mp *managed) serving() (in *instance, failed bool) {
	plugin, _ := mp.specNow()
	s, ok := mp.m.k.Scope(plugin)
	if !ok || s == nil {
		return nil, false
	}
	switch s.State() {
	case kernel.Active:
	case kernel.Failed:
		return nil, true
	default:
		return nil, false
	}
	mp.mu.Lock()
	in = mp.procs[s]
	mp.mu.Unlock()
	if in == nil || in.exited() {
		return nil, false
	}
	return in, false
}

// crashed reports whether a failed RPC into in failed because its process
// died, rather than by a timeout, the call's end, or the host stopping it.
func (in *instance) crashed(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if !in.exited() && (status.Code(err) != codes.Unavailable || !in.waitExited(exitGrace)) {
		return false
	}
	if in.mp == nil {
		return true
	}
	// (in.stopping cannot tell: watch stops a crashed process too.)
	in.mp.mu.Lock()
	defer in.mp.mu.Unlock()
	return !in.mp.deliberate
}

// addPreFilter records a pre-execute filter the process registered and
// returns its slot: the same filter is the same slot in the next process.
func (in *instance) addPreFilter(name, handler string) int {
	in.preMu.Lock()
	defer in.preMu.Unlock()
	in.preFilters = append(in.preFilters, preFilter{name: name, handler: handler})
	return len(in.preFilters) - 1
}

func (in *instance) preFilterAt(slot int) (preFilter, bool) {
	in.preMu.Lock()
	defer in.preMu.Unlock()
	if slot < 0 || slot >= len(in.preFilters) {
		return preFilter{}, false
	}
	return in.preFilters[slot], true
}

type preFilter struct{ name, handler string }

// retryAlone asks the pre-execute filter in slot again for e, in the
// plugin's next process and with no other stage-1 call of the plugin in
// flight, after the process dead died during e's call. The wait for the
// next process is bounded by ctx and by the restart's backoff plus the
// start timeout.
func (mp *managed) retryAlone(ctx context.Context, dead *instance, slot int, e *pipeline.Execution) (*pb.PreExecuteResponse, error) {
	name := "pre-execute listener"
	if f, ok := dead.preFilterAt(slot); ok && f.name != "" {
		name = "pre-execute listener " + f.name
	}
	k := poisonKey(e)
	plugin, maxBackoff := mp.specNow()
	bound := time.NewTimer(maxBackoff + mp.m.opts.StartTimeout)
	defer bound.Stop()
	var in *instance
	for {
		ch := mp.activatedCh()
		var failed bool
		if in, failed = mp.serving(); in != nil && in != dead {
			break
		}
		if failed {
			return nil, fmt.Errorf("plugin %s: %s: plugin process exited, and the plugin is not coming back to ask again", plugin, name)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("plugin %s: %s: plugin process exited; waiting for its restart to ask again: %w", plugin, name, ctx.Err())
		case <-bound.C:
			return nil, fmt.Errorf("plugin %s: %s: plugin process exited and did not come back in time to ask again", plugin, name)
		}
	}
	want, _ := dead.preFilterAt(slot)
	f, ok := in.preFilterAt(slot)
	if !ok || f.name != want.name {
		return nil, fmt.Errorf("plugin %s: %s: plugin process exited, and its next process has no such listener to ask again", plugin, name)
	}
	if err := mp.solo.lock(ctx); err != nil {
		return nil, fmt.Errorf("plugin %s: %s: plugin process exited; waiting to ask again alone: %w", plugin, name, err)
	}
	defer mp.solo.unlock()
	if mp.poisoned(k) {
		// A call with the same arguments proved it meanwhile.
		return nil, mp.errPoison(true)
	}
	if in.exited() {
		// Something else ended it meanwhile: not this call's proof.
		return nil, fmt.Errorf("plugin %s: %s: plugin process exited, and its next one too before it could be asked again", plugin, name)
	}
	x, seen := in.execution(e)
	rctx, cancel := in.filterCtx(ctx)
	defer cancel()
	// Set before the RPC, so that watch sees it whenever the process dies.
	in.soloRetry.Store(true)
	start := time.Now()
	resp, err := in.calls.PreExecute(rctx, &pb.PreExecuteRequest{HandlerId: f.handler, Execution: x})
	in.timed("pre_execute", start)
	if err == nil {
		in.soloRetry.Store(false)
		seen()
		return resp, nil
	}
	if !in.crashed(rctx, err) {
		in.soloRetry.Store(false)
		_ = settle(rctx, err)
		return nil, in.callErr(name, err)
	}
	mp.addPoison(k)
	mp.refund(dead)
	in.log.Error("a call's arguments crashed the plugin's pre-execute listener alone; the call is denied and the exit not counted toward its restart budget", "call", e.ID(), "tool", e.Name(), "pid", in.pid)
	return nil, mp.errPoison(false)
}
