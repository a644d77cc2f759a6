package remote

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// Retry alone: a call's arguments that crash a critical plugin's
// pre-execute listener (stage 1, filter or wrapper) or guard (stage 2)
// must not be able to spend its restart budget, after which every call is
// DENIED, nor fail the calls that were in flight beside it. When the
// process dies during such a call, the call waits for the next process
// and asks the same listener again with no other call's question to the
// plugin's listeners in flight (soloGate). If the process dies again, the
// arguments did it: the call is DENIED, neither exit is counted toward the
// restart budget (the first is taken back, the second never counted), and
// the same arguments to the same tool are denied from then on without
// being sent. Calls that only shared the first crash are served by their
// retry. While a retry alone runs (up to the listener timeout), the
// plugin's other listener calls wait for it.
//
// Not covered: the plugin's other calls (tools, stage 3 and later,
// results), which are not held during the retry.

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

// poisoned says which kind of listener ("pre-execute listener", "guard")
// these arguments crashed alone before; "" when none did.
func (mp *managed) poisoned(k [32]byte) string {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	return mp.poison[k]
}

// poisonedCall is poisoned for e's arguments; they are hashed only when
// some are remembered, so that ordinary calls do not pay for it.
func (mp *managed) poisonedCall(e *pipeline.Execution) string {
	mp.mu.Lock()
	none := len(mp.poison) == 0
	mp.mu.Unlock()
	if none {
		return ""
	}
	return mp.poisoned(poisonKey(e))
}

func (mp *managed) addPoison(k [32]byte, kind string) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if _, ok := mp.poison[k]; ok {
		return
	}
	if mp.poison == nil {
		mp.poison = map[[32]byte]string{}
	}
	if len(mp.poisonOrder) >= poisonMax {
		delete(mp.poison, mp.poisonOrder[0])
		mp.poisonOrder = mp.poisonOrder[1:]
	}
	mp.poison[k] = kind
	mp.poisonOrder = append(mp.poisonOrder, k)
}

// errPoison is the error of a call whose arguments crashed a critical
// plugin's listener of kind alone; the stage denies the call with it.
func (mp *managed) errPoison(kind string, again bool) error {
	name, _ := mp.specNow()
	if again {
		return fmt.Errorf("plugin %s: this call's arguments crashed its %s when retried alone before; denied without asking it", name, kind)
	}
	return fmt.Errorf("plugin %s: this call's arguments crashed its %s twice, the second time alone; denied, and neither exit counts toward its restart budget", name, kind)
}

// refused is the error for a call whose arguments crashed one of the
// plugin's listeners alone before, nil for any other call: it is not sent.
func (mp *managed) refused(e *pipeline.Execution) error {
	if kind := mp.poisonedCall(e); kind != "" {
		return mp.errPoison(kind, true)
	}
	return nil
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

// aloneAsk is a listener's question to ask again alone (retryAlone).
type aloneAsk struct {
	kind string // "pre-execute listener", "guard": what crashed
	name string // the listener's name in errors, kind and its own name
	// same says whether the next process registered the same listener.
	same func(in *instance) bool
	// ask asks it in that process and keeps the answer; its error is the
	// RPC's, for crashed to read.
	ask func(ctx context.Context, in *instance) error
	// ownTime says ask bounds its own time (a wrapper's budget, which
	// does not count next); else the listener timeout bounds it.
	ownTime bool
}

// retryAlone asks a's listener again for e, in the plugin's next process
// and with no other call's question to it in flight, after the process
// dead died during e's call. The wait for each next process is bounded
// by ctx, by the restart's backoff plus the start timeout, and by
// maxRestartWait. It returns nil
// once a's answer is kept; any error denies the call (fail closed).
func (mp *managed) retryAlone(ctx context.Context, dead *instance, e *pipeline.Execution, a aloneAsk) error {
	k := poisonKey(e)
	plugin, maxBackoff := mp.specNow()
	bound := time.NewTimer(min(maxBackoff+mp.m.opts.StartTimeout, maxRestartWait))
	defer bound.Stop()
	for tries := 0; ; tries++ {
		in, err := mp.nextServing(ctx, dead, bound.C, plugin, a.name)
		if err != nil {
			return err
		}
		if !a.same(in) {
			return fmt.Errorf("plugin %s: %s: plugin process exited, and its next process has no such listener to ask again", plugin, a.name)
		}
		if err := in.solo.lock(ctx, e.ID()); err != nil {
			return fmt.Errorf("plugin %s: %s: plugin process exited; waiting to ask again alone: %w", plugin, a.name, err)
		}
		err = mp.askAlone(ctx, in, dead, k, e, a)
		in.solo.unlock()
		if !errors.Is(err, errOvertaken) {
			return err
		}
		// Another call's retry alone ended that process first (another
		// call's arguments proven to crash it): this call's proof is yet
		// to come, in the process after it. Bounded, as each such end is
		// another call's, proven and not to come again.
		if tries >= maxOvertaken {
			return fmt.Errorf("plugin %s: %s: plugin process exited, and the next %d too before it could be asked again", plugin, a.name, tries+1)
		}
		dead = in
		// The wait for the process after it is bounded on its own: that
		// restart began only now.
		bound.Reset(min(maxBackoff+mp.m.opts.StartTimeout, maxRestartWait))
	}
}

// maxRestartWait bounds a retry's wait for the plugin's next process: a
// restart takes well under it, and a call sent to a process that is dead
// and not coming back soon (a start that hangs) is denied, as it was
// before calls were retried, rather than held for the whole start timeout.
const maxRestartWait = 3 * time.Second

// maxOvertaken bounds how many processes a retry alone lets other calls'
// retries end before it is asked.
const maxOvertaken = 3

// errOvertaken says the process to ask alone ended before it was asked.
var errOvertaken = errors.New("overtaken")

// nextServing waits for a process of the plugin other than dead to serve,
// bounded by ctx and bound.
func (mp *managed) nextServing(ctx context.Context, dead *instance, bound <-chan time.Time, plugin, name string) (*instance, error) {
	for {
		ch := mp.activatedCh()
		in, failed := mp.serving()
		if in != nil && in != dead {
			return in, nil
		}
		if failed {
			return nil, fmt.Errorf("plugin %s: %s: plugin process exited, and the plugin is not coming back to ask again", plugin, name)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("plugin %s: %s: plugin process exited; waiting for its restart to ask again: %w", plugin, name, ctx.Err())
		case <-bound:
			return nil, fmt.Errorf("plugin %s: %s: plugin process exited and did not come back in time to ask again", plugin, name)
		}
	}
}

// askAlone asks a's listener in in, holding in's gate alone; errOvertaken
// when in ended before it was asked. dead is the process whose crash is
// taken back when the arguments prove to crash in alone.
func (mp *managed) askAlone(ctx context.Context, in, dead *instance, k [32]byte, e *pipeline.Execution, a aloneAsk) error {
	if kind := mp.poisoned(k); kind != "" {
		// A call with the same arguments proved it meanwhile.
		return mp.errPoison(kind, true)
	}
	if in.exited() {
		return errOvertaken
	}
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if !a.ownTime {
		rctx, cancel = in.filterCtx(ctx)
	}
	defer cancel()
	// Set before the RPC, so that watch sees it whenever the process dies.
	in.soloRetry.Store(true)
	err := a.ask(rctx, in)
	if err == nil {
		in.soloRetry.Store(false)
		return nil
	}
	if !in.crashed(rctx, err) {
		in.soloRetry.Store(false)
		_ = settle(rctx, err)
		if _, rpc := status.FromError(err); !rpc {
			return err // ask's own, which says what failed
		}
		return in.callErr(a.name, err)
	}
	mp.addPoison(k, a.kind)
	mp.refund(dead)
	in.log.Error("a call's arguments crashed the plugin's "+a.kind+" alone; the call is denied and the exit not counted toward its restart budget", "call", e.ID(), "tool", e.Name(), "pid", in.pid)
	return mp.errPoison(a.kind, false)
}

// retryFilter asks the pre-execute filter in slot again alone (retryAlone).
func (mp *managed) retryFilter(ctx context.Context, dead *instance, slot int, e *pipeline.Execution) (*pb.PreExecuteResponse, error) {
	want, _ := dead.preFilterAt(slot)
	a := aloneAsk{kind: "pre-execute listener", name: "pre-execute listener"}
	if want.name != "" {
		a.name += " " + want.name
	}
	a.same = func(in *instance) bool {
		f, ok := in.preFilterAt(slot)
		return ok && f.name == want.name
	}
	var resp *pb.PreExecuteResponse
	a.ask = func(ctx context.Context, in *instance) error {
		f, _ := in.preFilterAt(slot)
		x, seen := in.execution(e)
		start := time.Now()
		r, err := in.calls.PreExecute(ctx, &pb.PreExecuteRequest{HandlerId: f.handler, Execution: x})
		in.timed("pre_execute", start)
		if err == nil {
			seen()
			resp = r
		}
		return err
	}
	if err := mp.retryAlone(ctx, dead, e, a); err != nil {
		return nil, err
	}
	return resp, nil
}
