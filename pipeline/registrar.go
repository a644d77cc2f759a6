package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/shared/identity"
)

// RegistrarOf returns the Registrar of the plugin whose scope s is: the
// tools service, which the plugin must inject (ServiceName). It is the one
// place that turns the kernel's untyped service into the pipeline's type.
func RegistrarOf(s *kernel.Scope) (*Registrar, error) {
	svc, err := s.Service(ServiceName)
	if err != nil {
		return nil, err
	}
	reg, ok := svc.(*Registrar)
	if !ok {
		return nil, fmt.Errorf("%s: service %q is a %T, not the tools service", s.Name(), ServiceName, svc)
	}
	return reg, nil
}

// Registrar is one plugin's handle on the service: everything registered
// through it is an effect of that plugin.
type Registrar struct {
	t *Tools
	s *kernel.Scope
}

// Tools returns the service itself.
func (r *Registrar) Tools() *Tools { return r.t }

// Register adds a tool. A duplicate name is refused with an error naming the
// plugin that owns it.
func (r *Registrar) Register(tool Tool) (*kernel.Effect, error) {
	reg, err := compile(tool, r.s.Name(), r.t.opts.MaxDescriptionBytes)
	if err != nil {
		return nil, err
	}
	r.t.naming.Lock()
	defer r.t.naming.Unlock()
	if errs := r.t.checkNames(r.s.Name(), []Tool{tool}); errs != nil {
		return nil, errs[0]
	}
	e, err := r.s.Contribute(PointTools, tool.Name, 0, reg)
	if err != nil {
		return nil, r.t.refusal(r.s.Name(), tool.Name, err)
	}
	return e, nil
}

// RegisterTools registers tools and disposes replace (effects of this
// plugin: tools it registered before) in one step: a call sees the tools
// as they were or as they are after, never a mix, and the registry is
// compiled once for the batch, not once per tool. A tool that cannot be
// registered (a bad schema, a name taken or reserved) is left out with its
// error at its index in errs (nil when every tool was registered); the rest
// are registered. err is set, and nothing changed, when the plugin's scope
// has ended.
func (r *Registrar) RegisterTools(replace []*kernel.Effect, tools []Tool) (effects []*kernel.Effect, errs []error, err error) {
	adds := make([]kernel.Addition, 0, len(tools))
	at := make([]int, 0, len(tools)) // index in tools of each add
	setErr := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(tools))
		}
		errs[i] = err
	}
	r.t.naming.Lock()
	defer r.t.naming.Unlock()
	named := r.t.checkNames(r.s.Name(), tools)
	for i, tool := range tools {
		reg, err := compile(tool, r.s.Name(), r.t.opts.MaxDescriptionBytes)
		if err == nil && named != nil && named[i] != nil {
			err = named[i]
		}
		if err != nil {
			setErr(i, err)
			continue
		}
		adds = append(adds, kernel.Addition{Point: PointTools, Key: tool.Name, Value: reg})
		at = append(at, i)
	}
	added, refused, err := r.s.ContributeAll(replace, adds)
	if err != nil {
		return nil, nil, err
	}
	effects = make([]*kernel.Effect, len(tools))
	for j, i := range at {
		if refused != nil && refused[j] != nil {
			setErr(i, r.t.refusal(r.s.Name(), tools[i].Name, refused[j]))
			continue
		}
		effects[i] = added[j]
	}
	return effects, errs, nil
}

// Guard adds a stage-2 guard; tools, when given, limits it to those tools.
func (r *Registrar) Guard(fn GuardFunc, tools ...string) (*kernel.Effect, error) {
	return r.s.Contribute(PointGuards, "", 0, newEntry(fn, r.s.Name(), tools))
}

// ConcurrentGuard adds a stage-2 guard that may run at the same time as the
// call's other concurrent guards: one that spends its time waiting on
// another process, so that N of them cost about the slowest one rather
// than their sum. The outcome is the same as in order: the reported
// denial is the first in registration order, and once it is known the
// guards still running are cancelled. A guard registered with Guard runs
// on the caller's goroutine, in order, as before.
func (r *Registrar) ConcurrentGuard(fn GuardFunc, tools ...string) (*kernel.Effect, error) {
	e := newEntry(fn, r.s.Name(), tools)
	e.concurrent = true
	return r.s.Contribute(PointGuards, "", 0, e)
}

// StartedGuard adds a concurrent guard (see ConcurrentGuard) given in two
// steps: start sends its check, the func it returns waits for the
// verdict. Among a call's concurrent guards, the started ones are all
// started on the caller's goroutine before any is waited for, so N guards
// in N processes cost about one round trip and no goroutine each. Alone,
// or among in-order guards, it runs as start then wait.
func (r *Registrar) StartedGuard(start GuardStart, tools ...string) (*kernel.Effect, error) {
	fn := func(ctx context.Context, e *Execution) (string, error) { return start(ctx, e)() }
	g := newEntry(GuardFunc(fn), r.s.Name(), tools)
	g.concurrent, g.start = true, start
	return r.s.Contribute(PointGuards, "", 0, g)
}

// OnPreExecute adds a stage-1 listener; tools, when given, limits it.
func (r *Registrar) OnPreExecute(fn PreExecuteFunc, tools ...string) (*kernel.Effect, error) {
	return r.s.Contribute(PointPreExecute, "", 0, newEntry(fn, r.s.Name(), tools))
}

// OnExecute adds a stage-3 wrapper; tools, when given, limits it.
func (r *Registrar) OnExecute(fn ExecuteFunc, tools ...string) (*kernel.Effect, error) {
	return r.s.Contribute(PointExecute, "", 0, newEntry(fn, r.s.Name(), tools))
}

// OnPostExecute adds a stage-4 listener; tools, when given, limits it.
func (r *Registrar) OnPostExecute(fn PostExecuteFunc, tools ...string) (*kernel.Effect, error) {
	return r.s.Contribute(PointPostExecute, "", 0, newEntry(fn, r.s.Name(), tools))
}

// OnResult adds a stage-5 observer; tools, when given, limits it.
func (r *Registrar) OnResult(fn ResultFunc, tools ...string) (*kernel.Effect, error) {
	return r.s.Contribute(PointResult, "", 0, newEntry(fn, r.s.Name(), tools))
}

// SetApprover makes fn the approver for Asks while it is the newest one.
func (r *Registrar) SetApprover(fn ApproverFunc) (*kernel.Effect, error) {
	return r.s.Contribute(PointApprovers, "", 0, newEntry(fn, r.s.Name(), nil))
}

// Execute calls a tool through the whole pipeline as this plugin, for the
// plugin itself: its principal is the service the plugin is.
func (r *Registrar) Execute(ctx context.Context, name string, args json.RawMessage) Result {
	ctx = WithPrincipal(ctx, Principal{ID: r.s.Name(), Kind: identity.KindService})
	return r.t.Execute(ctx, name, args, r.s.Name())
}

var _ kernel.Binder = (*Tools)(nil)
