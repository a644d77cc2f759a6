// Command testplugin is the plugin process of the out-of-process conformance
// harness: it builds, with the SDK only, the behaviours a conformance spec
// describes (internal/conformance/spec.go) from its configuration, and writes
// what only the process can see (a body ran, a context was cancelled) to
// one file per named log in LogDir.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/internal/conformance"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// Config is the test plugin's configuration.
type Config struct {
	Spec   conformance.PluginSpec `json:"spec"`
	LogDir string                 `json:"log_dir"`
	// Provides and Inject are services for cross-plugin tests: a provided
	// service answers "echo" with its arguments and "whoami" with the
	// plugin's name.
	Provides []string `json:"provides,omitempty"`
}

func main() {
	sdk.Serve(sdk.Plugin[Config]{
		Name:         "testplugin",
		Inject:       injectFromEnv(),
		Provides:     providesFromEnv(),
		ConfigSchema: `{"type":"object"}`,
		Apply:        apply,
	})
}

// The services a test plugin declares come from its environment, since a
// plugin declares them before it gets its configuration.
func injectFromEnv() []string   { return listEnv("TESTPLUGIN_INJECT", []string{"tools"}) }
func providesFromEnv() []string { return listEnv("TESTPLUGIN_PROVIDES", nil) }

func listEnv(key string, def []string) []string {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	var out []string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return def
	}
	return out
}

func apply(ctx context.Context, p *sdk.Context, cfg Config) error {
	b := &builder{logs: &fileLogs{dir: cfg.LogDir}}
	s := cfg.Spec
	var errs []error
	add := func(_ *sdk.Handle, err error) { errs = append(errs, err) }
	for _, ts := range s.Tools {
		t, err := b.tool(ts)
		if err != nil {
			return err
		}
		add(p.RegisterTool(ctx, t))
	}
	for _, ps := range s.Pre {
		l, err := b.pre(ps)
		if err != nil {
			return err
		}
		add(p.OnPreExecute(ctx, l))
	}
	for _, gs := range s.Guards {
		g, err := b.guard(gs)
		if err != nil {
			return err
		}
		add(p.AddGuard(ctx, g))
	}
	for _, es := range s.Exec {
		l, err := b.exec(es)
		if err != nil {
			return err
		}
		add(p.OnExecute(ctx, l))
	}
	for _, ps := range s.Post {
		l, err := b.post(ps)
		if err != nil {
			return err
		}
		add(p.OnPostExecute(ctx, l))
	}
	for _, os := range s.Observers {
		add(p.OnResult(ctx, b.observer(os)))
	}
	if s.Approver != nil {
		a, err := b.approver(*s.Approver)
		if err != nil {
			return err
		}
		add(p.SetApprover(ctx, a))
	}
	for _, name := range cfg.Provides {
		add(p.Provide(ctx, sdk.Service{Name: name, Methods: map[string]sdk.Method{
			"echo":   func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil },
			"whoami": func(ctx context.Context, args json.RawMessage) (any, error) { return s.Name, nil },
		}}))
	}
	return errors.Join(errs...)
}

// fileLogs appends each entry as a line of <dir>/<name>.log.
type fileLogs struct {
	dir string
	mu  sync.Mutex
}

func (l *fileLogs) add(name, entry string) {
	if name == "" || l.dir == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(l.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintln(f, entry)
	f.Close()
}

type builder struct{ logs *fileLogs }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func number(c *sdk.Call, field string) (float64, bool) {
	var args map[string]any
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return 0, false
	}
	n, ok := args[field].(float64)
	return n, ok
}

func outcome(ok bool, code string) string {
	if ok {
		return "ok"
	}
	return code
}
