// Command testplugin is the plugin process of the out-of-process conformance
// harness: it builds, with the SDK only, the behaviours a conformance spec
// describes (internal/testkit/conformance/spec.go) from its configuration, and writes
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
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// Config is the test plugin's configuration.
type Config struct {
	Spec   conformance.PluginSpec `json:"spec"`
	LogDir string                 `json:"log_dir"`
	// Provides and Inject are services for cross-plugin tests: a provided
	// service answers "echo" with its arguments, "whoami" with the
	// plugin's name and "pid" with its process id.
	Provides []string `json:"provides,omitempty"`
	// Gate, when set, is a file whose presence holds Apply until it is
	// removed (or the host gives up on the apply): a harness that kills the
	// plugin creates it first, so that the process its manager starts again
	// stays out of the pipeline until the harness lets it in.
	Gate string `json:"gate,omitempty"`
	// ApplyLog names a log that gets "apply <pid>" each time Apply starts.
	ApplyLog string `json:"apply_log,omitempty"`
	// Control names a tool that runs test operations (control.go).
	Control string `json:"control,omitempty"`
	// LateTools are registered by a goroutine after Apply has returned,
	// outside any call from the host.
	LateTools []conformance.ToolSpec `json:"late_tools,omitempty"`
	// CrashOnApply, when set, makes Apply write it as a line to the
	// process's stderr and exit with status 3, as a plugin that dies on a
	// fatal error would.
	CrashOnApply string `json:"crash_on_apply,omitempty"`
	// CrashAfterApply does the same 100ms after Apply has returned, once
	// the plugin is active.
	CrashAfterApply string `json:"crash_after_apply,omitempty"`
}

func main() {
	if os.Getenv("TESTPLUGIN_NOISE") != "" {
		makeNoise()
	}
	if os.Getenv("TESTPLUGIN_EARLY_NOISE") != "" {
		fmt.Println("noise from main, before Serve")
	}
	sdk.Serve(sdk.Plugin[Config]{
		Name:         "testplugin",
		Inject:       injectFromEnv(),
		Provides:     providesFromEnv(),
		ConfigSchema: `{"type":"object"}`,
		Apply:        apply,
		Stop:         profileFromEnv(),
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
	b.logs.add(cfg.ApplyLog, "apply "+strconv.Itoa(os.Getpid()))
	if cfg.CrashOnApply != "" {
		crash(cfg.CrashOnApply)
	}
	if err := waitGate(ctx, cfg.Gate); err != nil {
		return err
	}
	s := cfg.Spec
	h := &handles{m: map[string]*sdk.Handle{}}
	var errs []error
	add := func(key string) func(*sdk.Handle, error) {
		return func(hd *sdk.Handle, err error) {
			errs = append(errs, err)
			h.put(key, hd)
		}
	}
	for _, ts := range s.Tools {
		t, err := b.tool(ts)
		if err != nil {
			return err
		}
		add("tool:" + ts.Name)(p.RegisterTool(ctx, t))
	}
	for i, ps := range s.Pre {
		l, err := b.pre(ps)
		if err != nil {
			return err
		}
		add("pre:" + strconv.Itoa(i))(p.OnPreExecute(ctx, l))
	}
	for i, gs := range s.Guards {
		g, err := b.guard(gs)
		if err != nil {
			return err
		}
		add("guard:" + strconv.Itoa(i))(p.AddGuard(ctx, g))
	}
	for i, es := range s.Exec {
		l, err := b.exec(es)
		if err != nil {
			return err
		}
		add("exec:" + strconv.Itoa(i))(p.OnExecute(ctx, l))
	}
	for i, ps := range s.Post {
		l, err := b.post(ps)
		if err != nil {
			return err
		}
		add("post:" + strconv.Itoa(i))(p.OnPostExecute(ctx, l))
	}
	for i, os := range s.Observers {
		add("observer:" + strconv.Itoa(i))(p.OnResult(ctx, b.observer(os)))
	}
	if s.Approver != nil {
		a, err := b.approver(*s.Approver)
		if err != nil {
			return err
		}
		add("approver")(p.SetApprover(ctx, a))
	}
	for _, name := range cfg.Provides {
		add("provide:" + name)(p.Provide(ctx, sdk.Service{Name: name, Methods: map[string]sdk.Method{
			"echo":   func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil },
			"whoami": func(ctx context.Context, args json.RawMessage) (any, error) { return s.Name, nil },
			"pid":    func(ctx context.Context, args json.RawMessage) (any, error) { return os.Getpid(), nil },
		}}))
	}
	if cfg.Control != "" {
		add("tool:" + cfg.Control)(p.RegisterTool(ctx, b.control(cfg.Control, p, h)))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if cfg.CrashAfterApply != "" {
		time.AfterFunc(100*time.Millisecond, func() { crash(cfg.CrashAfterApply) })
	}
	if len(cfg.LateTools) > 0 {
		late := make([]sdk.Tool, 0, len(cfg.LateTools))
		for _, ts := range cfg.LateTools {
			t, err := b.tool(ts)
			if err != nil {
				return err
			}
			late = append(late, t)
		}
		go registerLate(p, h, late)
	}
	return nil
}

// registerLate registers tools once Apply has returned, as a plugin that
// discovers tools in the background would. Apply's context has ended by
// then, so each registration runs under a context of its own.
func registerLate(p *sdk.Context, h *handles, tools []sdk.Tool) {
	time.Sleep(10 * time.Millisecond)
	for _, t := range tools {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		hd, err := p.RegisterTool(ctx, t)
		cancel()
		if err != nil {
			p.Logger().Error("late registration failed", "tool", t.Name, "error", err)
			continue
		}
		h.put("tool:"+t.Name, hd)
	}
}

// crash writes msg to the process's real stderr (fd 2: go-plugin has pointed
// os.Stderr at a pipe of its own by now) and exits with status 3.
func crash(msg string) {
	_, _ = os.NewFile(2, "stderr").WriteString(msg + "\n")
	os.Exit(3)
}

// waitGate holds Apply while the gate file exists.
func waitGate(ctx context.Context, gate string) error {
	if gate == "" {
		return nil
	}
	for {
		if _, err := os.Stat(gate); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// handles are the registrations the plugin made, by key ("tool:<name>",
// "guard:<i>", ...), for the control tool's dispose.
type handles struct {
	mu sync.Mutex
	m  map[string]*sdk.Handle
}

func (h *handles) put(key string, hd *sdk.Handle) {
	if hd == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[key] = hd
}

func (h *handles) take(key string) (*sdk.Handle, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd, ok := h.m[key]
	delete(h.m, key)
	return hd, ok
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

// lines is how many entries the log holds, those of the plugin's earlier
// processes included.
func (l *fileLogs) lines(name string) int {
	if name == "" || l.dir == "" {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(l.dir, name+".log"))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
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

// profileFromEnv writes a CPU profile of the process to the file
// TESTPLUGIN_CPUPROFILE names, from its start to its stop hook, so that a
// benchmark can profile the plugin's side of a call (see remote's
// bench_test.go). It returns the stop hook.
func profileFromEnv() func(context.Context) error {
	path := os.Getenv("TESTPLUGIN_CPUPROFILE")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testplugin: cpu profile:", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "testplugin: cpu profile:", err)
		f.Close()
		return nil
	}
	return func(context.Context) error {
		pprof.StopCPUProfile()
		return f.Close()
	}
}
