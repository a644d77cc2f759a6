package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// crasher is the listener crash_on adds: it exits the process for a call
// whose "what" starts with crash_on. With crash_beside set, it first waits
// until that many calls whose "what" starts with "neighbour" are in it at
// once (at most a few seconds), so that the exit fails calls that are not
// its doing; a neighbour waits in it for such an exit (at most a couple of
// seconds, so that asked alone it passes).
type crasher struct {
	on     string
	beside int
	log    string // a file each exit appends a line to, when set

	mu         sync.Mutex
	neighbours int
	changed    chan struct{} // closed and replaced on every change
	crashing   chan struct{} // closed when a crashing call arrives
}

func newCrasher(cfg Config) *crasher {
	return &crasher{on: cfg.CrashOn, beside: cfg.CrashBeside, log: cfg.CrashLog, changed: make(chan struct{}), crashing: make(chan struct{})}
}

// check exits the process for a crashing call and passes every other.
func (c *crasher) check(ctx context.Context, call *sdk.Call) {
	var a Attempt
	if err := call.Bind(&a); err != nil {
		return
	}
	switch {
	case strings.HasPrefix(a.What, c.on):
		c.crash()
	case c.beside > 0 && strings.HasPrefix(a.What, "neighbour"):
		c.neighbour(ctx)
	}
}

func (c *crasher) crash() {
	c.mu.Lock()
	select {
	case <-c.crashing:
	default:
		close(c.crashing)
	}
	c.mu.Unlock()
	deadline := time.After(3 * time.Second)
	for {
		c.mu.Lock()
		n, ch := c.neighbours, c.changed
		c.mu.Unlock()
		if n >= c.beside {
			break
		}
		select {
		case <-ch:
			continue
		case <-deadline:
		}
		break
	}
	c.mu.Lock()
	n := c.neighbours
	c.mu.Unlock()
	line := fmt.Sprintf("hostile: crashing with %d neighbour calls in flight\n", n)
	fmt.Fprint(os.Stderr, line)
	if c.log != "" {
		if f, err := os.OpenFile(c.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, _ = f.WriteString(line)
			_ = f.Close()
		}
	}
	os.Exit(3)
}

func (c *crasher) neighbour(ctx context.Context) {
	c.mu.Lock()
	c.neighbours++
	close(c.changed)
	c.changed = make(chan struct{})
	crashing := c.crashing
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.neighbours--
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-crashing:
		<-ctx.Done() // the exit ends it first
	case <-t.C:
	case <-ctx.Done():
	}
}

// addCrasher adds the crasher as a pre-execute filter or, with crash_in =
// "guard", as a guard, or with "wrap", as a wrapping pre-execute listener.
func addCrasher(ctx context.Context, p *sdk.Context, cfg Config) error {
	c := newCrasher(cfg)
	if cfg.CrashIn == "guard" {
		_, err := p.AddGuard(ctx, sdk.Guard{Name: "crasher", Check: func(ctx context.Context, call *sdk.Call) (string, error) {
			c.check(ctx, call)
			return "", nil
		}})
		return err
	}
	if cfg.CrashIn == "wrap" {
		_, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{Name: "crasher", Wrap: func(ctx context.Context, call *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
			c.check(ctx, call)
			return next(ctx)
		}})
		return err
	}
	_, err := p.OnPreExecute(ctx, sdk.PreExecuteListener{Name: "crasher", Filter: func(ctx context.Context, call *sdk.Call) (sdk.Decision, error) {
		c.check(ctx, call)
		return sdk.Pass(), nil
	}})
	return err
}
