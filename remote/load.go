package remote

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/plugkit-go/plugkit/kernel"
)

// plan is one definition of a plugin (Load's, or a reload's) and the process
// launched to ask it what it needs, which its first apply takes over.
type plan struct {
	mp   *managed
	spec Spec

	mu    sync.Mutex
	first *instance
	pin   *string // set by Manager.Pin: the sha256 a restart checks
}

// launchSpec is the spec a restart launches: the plan's, with the pin
// Manager.Pin may have set since.
func (p *plan) launchSpec() Spec {
	p.mu.Lock()
	defer p.mu.Unlock()
	spec := p.spec
	if p.pin != nil {
		spec.SHA256 = *p.pin
	}
	return spec
}

// takeFirst returns the process launched with the plan, once.
func (p *plan) takeFirst() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.first
	p.first = nil
	return in
}

// dropFirst stops the process launched with the plan if no apply took it.
func (p *plan) dropFirst() {
	if in := p.takeFirst(); in != nil {
		in.stop()
	}
}

// Load starts a plugin process, asks what it needs, and adds it to the
// kernel; its apply step runs once every service it injects is provided.
func (m *Manager) Load(ctx context.Context, spec Spec) error {
	return m.LoadAll(ctx, []Spec{spec})[0]
}

// startConcurrency bounds how many plugin processes LoadAll starts at once:
// enough to overlap their start-up (mostly waiting on exec, the runtime's
// start and the handshake), few enough that a deployment of hundreds does
// not make every handshake late on a small machine.
var startConcurrency = max(8, 4*runtime.GOMAXPROCS(0))

// LoadAll loads plugins as Load does, one error for each spec (nil when it
// loaded). Their processes are started and asked what they need
// concurrently, and each is added to the kernel as soon as it and those
// before it were: the order of their apply steps, and so which plugin a
// conflict favours, is that of a Load of each in turn, while the later
// ones still start.
func (m *Manager) LoadAll(ctx context.Context, specs []Spec) []error {
	errs := make([]error, len(specs))
	mps := make([]*managed, len(specs))
	for i, spec := range specs {
		mps[i], errs[i] = m.reserve(spec)
	}
	plans := make([]*plan, len(specs))
	defs := make([]kernel.Plugin, len(specs))
	ready := make([]chan struct{}, len(specs))
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	go func() {
		sem := make(chan struct{}, startConcurrency)
		for i, mp := range mps {
			if mp == nil {
				close(ready[i])
				continue
			}
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; close(ready[i]) }()
				plans[i], defs[i], errs[i] = mp.prepare(ctx, mp.spec)
			}()
		}
	}()
	for i, mp := range mps {
		<-ready[i]
		if mp == nil {
			continue
		}
		if errs[i] != nil {
			m.forget(mp)
			errs[i] = fmt.Errorf("load plugin %s: %w", mp.spec.Name, errs[i])
			continue
		}
		mp.mu.Lock()
		mp.plan = plans[i]
		mp.mu.Unlock()
		// A failed apply leaves the scope FAILED and visible; a critical
		// plugin stays held.
		_, errs[i] = m.k.Load(defs[i])
	}
	return errs
}

// reserve makes a plugin's name the manager's before its process starts,
// holding the calls a critical plugin would check until it is ACTIVE.
func (m *Manager) reserve(spec Spec) (*managed, error) {
	if spec.Name == "" {
		return nil, errors.New("load plugin: no name")
	}
	spec.Restart = spec.Restart.withDefaults()
	mp := &managed{m: m, spec: spec, procs: map[*kernel.Scope]*instance{}}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("load plugin: manager is closed")
	}
	if _, dup := m.plugins[spec.Name]; dup {
		m.mu.Unlock()
		return nil, fmt.Errorf("load plugin %s: already loaded", spec.Name)
	}
	m.plugins[spec.Name] = mp
	m.mu.Unlock()
	if spec.Critical {
		mp.holdCalls("starting")
	}
	return mp, nil
}

// forget undoes reserve for a plugin whose process did not start.
func (m *Manager) forget(mp *managed) {
	mp.releaseHold()
	m.mu.Lock()
	delete(m.plugins, mp.spec.Name)
	m.mu.Unlock()
}

// prepare launches a process for spec, asks what it needs and returns the
// kernel plugin whose first apply takes that process over.
func (mp *managed) prepare(ctx context.Context, spec Spec) (*plan, kernel.Plugin, error) {
	in, err := mp.m.launch(ctx, spec)
	if err != nil {
		return nil, kernel.Plugin{}, err
	}
	desc, err := in.describe(ctx, applyConfig(spec))
	if err != nil {
		in.stop()
		return nil, kernel.Plugin{}, err
	}
	inject := spec.Inject
	if inject == nil {
		inject = desc.GetInject()
	} else if missing := missingFrom(desc.GetInject(), inject); len(missing) > 0 {
		in.stop()
		return nil, kernel.Plugin{}, fmt.Errorf("it needs %s, which its inject does not list", strings.Join(missing, ", "))
	}
	p := &plan{mp: mp, spec: spec, first: in}
	return p, kernel.Plugin{Name: spec.Name, Inject: inject, Apply: p.apply}, nil
}

func missingFrom(need, have []string) []string {
	var out []string
	for _, n := range need {
		if !slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	return out
}
