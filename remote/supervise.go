package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// Supervision: a managed plugin keeps the process of each live version,
// starts it in its scope's apply step, restarts it under the restart
// policy when it dies, and holds calls (critical) or marks its tools
// absent while it is down.

// managed is one plugin of the deployment across its process restarts.
type managed struct {
	m    *Manager
	spec Spec

	mu          sync.Mutex
	plan        *plan                       // the current definition
	procs       map[*kernel.Scope]*instance // the process of each live version
	deliberate  bool                        // an unload was asked: no restart, no hold
	hold        func()
	absent      []func()            // releases the "restarting" marks of its tools
	durable     *durableResults     // a critical plugin's result listeners
	absentTools []pipeline.ToolInfo // its tools as registered, while absent
	crashes     []time.Time
	restarts    int
	oomKills    int // processes killed at the sandbox's memory limit
	// registered counts the tools its processes registered, each
	// registration once (a changed tool registered again counts again):
	// how much registry work the plugin caused.
	registered atomic.Int64
	lastExit   string
	lastStderr []string // the stderr tail of the process that last crashed
	lastStart  error    // why the last start failed; nil once a process crashed after starting
	egress     egressCounts

	stops sync.WaitGroup // processes being stopped (endProcess)

	// poison and activated serve the retry alone of a critical plugin's
	// listeners (solo.go): the arguments proven to crash one alone, with
	// the kind of listener (poisonOrder oldest first), and a channel
	// closed when it next turns ACTIVE.
	poison      map[[32]byte]string
	poisonOrder [][32]byte
	activated   chan struct{}
}

var errGaveUp = errors.New("restart budget exhausted")

// apply is the kernel apply step of a remote plugin: start (or take) the
// process, make it an effect of the scope, serve it the Host service and
// run its apply step.
func (p *plan) apply(ctx context.Context, s *kernel.Scope) error {
	mp := p.mp
	in := p.takeFirst()
	if in == nil {
		var err error
		if in, err = mp.relaunch(ctx, p.launchSpec()); err != nil {
			return err
		}
	} else if err := mp.budgetSpent(); err != nil {
		in.stop()
		return err
	}
	in.scope = s
	if p.spec.Critical {
		in.durable = mp.durableResults()
		in.mp = mp
	}
	if _, err := s.Track("process "+strconv.Itoa(in.pid), func() error { mp.endProcess(in); return nil }); err != nil {
		in.stop()
		return err
	}
	mp.mu.Lock()
	mp.procs[s] = in
	mp.mu.Unlock()
	go mp.watch(in)

	hs := newHostService(in, s)
	hs.registered = &mp.registered
	in.host.Store(hs)
	id := in.client.ServeHost(hs, in.serveHost...)
	resp, err := in.client.Apply(ctx, &pb.ApplyRequest{ConfigJson: applyConfig(p.spec), HostBrokerId: id})
	if err != nil {
		return in.callErr("apply", err)
	}
	if resp.GetError() != "" {
		return errors.New(resp.GetError())
	}
	return nil
}

// applyConfig is the config a plugin's apply step is given.
func applyConfig(spec Spec) json.RawMessage {
	if len(spec.Config) == 0 {
		return json.RawMessage("{}")
	}
	return spec.Config
}

// relaunch starts a new process for a version whose first process is gone
// (a crash restart, or a rebuild after a service it injects came back),
// after the restart policy's backoff. A start that fails counts as a crash
// and is tried again under the same policy: a failure the host can recover
// from (too many open files while it is under attack, a binary being
// replaced) must not leave the plugin FAILED for good. The loop ends when a
// process starts, the budget is spent, or ctx ends (an unload or a reload).
func (mp *managed) relaunch(ctx context.Context, spec Spec) (*instance, error) {
	for {
		mp.mu.Lock()
		wait, gaveUp := mp.backoffLocked()
		mp.mu.Unlock()
		if gaveUp {
			return nil, mp.gaveUpErr()
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		in, err := mp.m.launch(ctx, spec)
		if err == nil {
			return in, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		mp.startFailed(err)
	}
}

// startFailed records a start that failed during a restart as a crash.
func (mp *managed) startFailed(err error) {
	mp.mu.Lock()
	mp.crashes = append(mp.crashes, time.Now())
	mp.restarts++
	mp.lastStart = err
	var e *exitError
	if errors.As(err, &e) {
		mp.lastExit, mp.lastStderr = e.summary(), slices.Clone(e.stderr)
	} else {
		mp.lastExit, mp.lastStderr = "no process started: "+err.Error(), nil
	}
	mp.mu.Unlock()
	mp.m.log.Named(mp.spec.Name).Error("plugin process did not start; trying again under its restart policy", "error", err)
	mp.markAbsent("plugin " + mp.spec.Name + " is restarting: its last start failed: " + err.Error())
}

// budgetSpent is the error of a plugin whose restart budget is spent, or nil.
func (mp *managed) budgetSpent() error {
	mp.mu.Lock()
	_, gaveUp := mp.backoffLocked()
	mp.mu.Unlock()
	if gaveUp {
		return mp.gaveUpErr()
	}
	return nil
}

// gaveUpErr says that the restart budget is spent and why the last attempt
// failed; a start that failed is wrapped, so that Status can show how its
// process ended.
func (mp *managed) gaveUpErr() error {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.lastStart != nil {
		return fmt.Errorf("%w: %d crashes within %s; last: %w", errGaveUp, len(mp.crashes), mp.spec.Restart.Window, mp.lastStart)
	}
	return fmt.Errorf("%w: %d crashes within %s; last: %s", errGaveUp, len(mp.crashes), mp.spec.Restart.Window, mp.lastExit)
}

// backoffLocked says how long to wait before the next start and whether the
// restart budget is spent.
func (mp *managed) backoffLocked() (time.Duration, bool) {
	p := mp.spec.Restart
	cutoff := time.Now().Add(-p.Window)
	mp.crashes = slices.DeleteFunc(mp.crashes, func(t time.Time) bool { return t.Before(cutoff) })
	n := len(mp.crashes)
	if n == 0 {
		return 0, false
	}
	if p.Attempts >= 0 && n > p.Attempts {
		return 0, true
	}
	wait := p.Backoff << (n - 1)
	if wait > p.MaxBackoff || wait <= 0 {
		wait = p.MaxBackoff
	}
	return wait, false
}

// watch restarts the plugin when its process exits without being asked to.
func (mp *managed) watch(in *instance) {
	select {
	case <-in.stopping:
		return
	case <-in.client.Exited():
	}
	select {
	case <-in.stopping:
		return
	default:
	}
	if cur, _ := mp.m.k.Scope(mp.spec.Name); cur != in.scope {
		// A version a reload is starting (its reload fails) or has just
		// retired (nothing to do): the version that serves is untouched.
		in.stop()
		_ = in.scope.Restart(in.exitError(fmt.Errorf("its new process %d exited while starting", in.pid), "apply"))
		return
	}
	mp.mu.Lock()
	if mp.deliberate {
		mp.mu.Unlock()
		return
	}
	mp.lastStart = nil
	mp.lastExit = "process " + strconv.Itoa(in.pid) + " exited unexpectedly: " + in.exitReason()
	if in.soloRetry.Load() {
		// A call's arguments did it, asked alone: the call is denied, and
		// the plugin's budget is not spent on it, nor its restart count.
		mp.lastExit += " (while a call was retried alone; not counted)"
	} else {
		in.crashedAt = time.Now()
		mp.crashes = append(mp.crashes, in.crashedAt)
		mp.restarts++
	}
	if in.oomKilled() {
		mp.oomKills++
	}
	mp.lastStderr = in.stderr.Lines()
	cause := errors.New(mp.lastExit)
	mp.mu.Unlock()
	in.log.Error("plugin process exited; restarting", "pid", in.pid)
	mp.markAbsent("plugin " + mp.spec.Name + " is restarting: its " + mp.lastExit)
	in.stop()
	_ = in.scope.Restart(cause)
}

// markAbsent makes calls to the plugin's tools fail at once with why, while
// they are missing (until it is ACTIVE again or unloaded), instead of
// UNKNOWN_TOOL, and keeps their names reserved for it meanwhile: another
// plugin (a bridged server that re-lists them) cannot take them while this
// one restarts or is failed. It is set before the tools go, so there is no
// moment when a call finds neither, nor a name left free.
func (mp *managed) markAbsent(why string) {
	var names []pipeline.ToolInfo
	for _, t := range mp.m.tools.List() {
		if t.Owner == mp.spec.Name {
			// As registered, so that the visibility question is asked of
			// it as of the tool while it is missing.
			names = append(names, t)
		}
	}
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.deliberate {
		return
	}
	if len(names) == 0 {
		// Gone already (it died again before registering): the same
		// tools, with the new reason.
		names = mp.absentTools
	}
	for _, release := range mp.absent {
		release()
	}
	mp.absent, mp.absentTools = nil, names
	for _, n := range names {
		mp.absent = append(mp.absent, mp.m.tools.ReserveTool(n, why))
	}
}

func (mp *managed) releaseAbsent() {
	mp.mu.Lock()
	rel := mp.absent
	mp.absent, mp.absentTools = nil, nil
	mp.mu.Unlock()
	for _, release := range rel {
		release()
	}
}

// durableResults returns the plugin's durable result delivery, made once.
func (mp *managed) durableResults() *durableResults {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.durable == nil {
		mp.durable = newDurableResults(mp.spec.Name, mp.m.tools, mp.m.log.Named(mp.spec.Name))
		mp.durable.receipts = mp.m.receipts
	}
	return mp.durable
}

// endProcess is the undo of a version's process. A process that still runs
// is stopped on a goroutine of its own: its drain may take up to the drain
// timeout, and undos run with the kernel's lifecycle lock held, which must
// not keep other plugins from starting or restarting meanwhile. Unload and
// Reload wait for it (stops).
func (mp *managed) endProcess(in *instance) {
	if in.exited() {
		mp.stopProcess(in)
		return
	}
	mp.stops.Add(1)
	go func() {
		defer mp.stops.Done()
		mp.stopProcess(in)
	}()
}

// stopProcess stops a version's process. When the process still
// runs (an unload, or the old version after a reload), calls that may still
// reach it finish first, within the drain timeout.
func (mp *managed) stopProcess(in *instance) {
	if !in.exited() {
		ctx, cancel := context.WithTimeout(context.Background(), mp.m.opts.DrainTimeout)
		if err := mp.m.tools.Quiesce(ctx); err != nil {
			in.log.Warn("stopping the process with calls still in flight", "error", err)
		}
		cancel()
		if in.durable != nil {
			ctx, cancel := context.WithTimeout(context.Background(), mp.m.opts.DrainTimeout)
			in.durable.release(ctx, mp.m.opts.DrainTimeout, in)
			cancel()
		}
	} else if in.durable != nil {
		in.durable.release(context.Background(), mp.m.opts.DrainTimeout, in)
	}
	in.stop()
	mp.mu.Lock()
	delete(mp.procs, in.scope)
	mp.mu.Unlock()
}

// holdCalls makes every call DENIED naming this critical plugin.
func (mp *managed) holdCalls(why string) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.hold != nil || mp.deliberate {
		return
	}
	mp.hold = mp.m.tools.Hold(mp.spec.Name, fmt.Sprintf("critical plugin %s is not active (%s)", mp.spec.Name, why))
}

func (mp *managed) releaseHold() {
	mp.mu.Lock()
	h := mp.hold
	mp.hold = nil
	mp.mu.Unlock()
	if h != nil {
		h()
	}
}

// onState follows the scopes of critical plugins: held unless ACTIVE.
func (m *Manager) onState(sc kernel.StateChange) {
	m.mu.Lock()
	mp := m.plugins[sc.Plugin]
	m.mu.Unlock()
	if mp == nil {
		return
	}
	switch sc.To {
	case kernel.Active:
		mp.releaseAbsent()
	case kernel.Failed:
		if sc.Err != nil {
			mp.markAbsent("plugin " + sc.Plugin + " failed: " + sc.Err.Error() + " (host reload " + sc.Plugin + " starts it again)")
		}
	}
	mp.mu.Lock()
	critical := mp.spec.Critical
	mp.mu.Unlock()
	if !critical {
		return
	}
	if sc.To == kernel.Active {
		mp.releaseHold()
	} else {
		mp.holdCalls(strings.ToLower(sc.To.String()))
	}
	if sc.To == kernel.Active || sc.To == kernel.Failed {
		// Calls retried alone wait for either (solo.go).
		mp.signalState()
	}
}
