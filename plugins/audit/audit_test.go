package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
	"github.com/plugkit-go/plugkit/shared/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 5, 4, 10, 20, 30, 0, time.UTC)

// harness is an auditor as Apply would make it, with a clock that ticks a
// millisecond per line and fsyncs counted.
type harness struct {
	*auditor
	syncs atomic.Int64
	ticks atomic.Int64
}

func newHarness() *harness {
	h := &harness{auditor: newAuditor()}
	h.now = func() time.Time { return t0.Add(time.Duration(h.ticks.Add(1)) * time.Millisecond) }
	h.fsync = func(f *os.File) error { h.syncs.Add(1); return f.Sync() }
	return h
}

func (h *harness) mustStart(t *testing.T, s settings) {
	t.Helper()
	if err := h.start(s, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) mustStop(t *testing.T) {
	t.Helper()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

// logSettings is the default configuration on a fresh path.
func logSettings(t *testing.T) settings {
	s, err := Config{Path: filepath.Join(t.TempDir(), "audit.log")}.settings()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// outcomes are one result of each kind the host produces.
var outcomes = []struct {
	code, decidedBy string
}{
	{"", ""},
	{"UNKNOWN_TOOL", ""},
	{"INVALID_ARGUMENTS", ""},
	{"DENIED", "safety"},
	{"BLOCKED", "redact"},
	{"TOOL_ERROR", ""},
	{"TOOL_TIMEOUT", "timeout"},
	{"ABORTED", ""},
}

// result i: the outcomes in turn, arguments that differ per call.
func result(i int) (*sdk.Call, sdk.ToolResult) {
	o := outcomes[i%len(outcomes)]
	call := &sdk.Call{Execution: sdk.Execution{
		ID:        fmt.Sprintf("call-%d", i),
		Name:      "add",
		Caller:    "cli",
		Arguments: fmt.Appendf(nil, `{"a":%d,"secret":"hunter2"}`, i),
	}}
	r := sdk.ToolResult{ID: call.ID, OK: o.code == "", DecidedBy: o.decidedBy, Duration: time.Duration(i)*time.Millisecond + 5}
	if o.code != "" {
		r.Error = &sdk.ToolError{Code: wire.Code(o.code), Message: "no"}
	}
	return call, r
}

// observeN delivers results from to to-1, each in a batch of its own: the
// SDK calls Flush after a batch's last result, before acknowledging it.
func observeN(h *harness, from, to int) {
	for i := from; i < to; i++ {
		call, r := result(i)
		h.observeWithReceipt(context.Background(), call, r)
		_ = h.flush(context.Background())
	}
}

// observeBatch delivers results from to to-1 as one batch, as one stream
// does, and returns what Flush returned.
func observeBatch(ctx context.Context, h *harness, from, to int) error {
	for i := from; i < to; i++ {
		call, r := result(i)
		h.observeWithReceipt(ctx, call, r)
	}
	return h.flush(ctx)
}

func readLines(t *testing.T, path string) []auditlog.Line {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, _, err := auditlog.VerifyAnchor(bytes.NewReader(data), ""); err != nil {
		t.Fatalf("the log does not verify after %d lines: %v", n, err)
	}
	var out []auditlog.Line
	for text := range bytes.Lines(data) {
		l, err := auditlog.ParseLine(bytes.TrimSuffix(text, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func TestEveryOutcomeIsOneLine(t *testing.T) {
	h := newHarness()
	s := logSettings(t)
	h.mustStart(t, s)
	observeN(h, 0, len(outcomes))
	h.mustStop(t)

	got := readLines(t, s.path)
	if len(got) != len(outcomes) {
		t.Fatalf("%d lines, want %d", len(got), len(outcomes))
	}
	for i, l := range got {
		call, r := result(i)
		want := auditlog.Line{
			Seq: uint64(i + 1), Time: t0.Add(time.Duration(i+1) * time.Millisecond),
			ID: call.ID, Caller: "cli", Tool: "add", OK: r.OK, Code: outcomes[i].code, DecidedBy: outcomes[i].decidedBy,
			Duration: r.Duration, ArgsSHA256: auditlog.Digest(call.Arguments), Prev: l.Prev, Hash: l.Hash,
		}
		if !l.Time.Equal(want.Time) {
			t.Errorf("line %d: time %v, want %v", i+1, l.Time, want.Time)
		}
		l.Time = want.Time
		if fmt.Sprint(l) != fmt.Sprint(want) {
			t.Errorf("line %d:\n got %+v\nwant %+v", i+1, l, want)
		}
	}
}

func TestCreatesTheLogAndItsFolder(t *testing.T) {
	h := newHarness()
	s := logSettings(t)
	s.path = filepath.Join(filepath.Dir(s.path), "a", "b", "audit.log")
	h.mustStart(t, s)
	h.mustStop(t)
	for path, want := range map[string]os.FileMode{s.path: 0o600, filepath.Dir(s.path): 0o700 | os.ModeDir} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		// The umask can only take bits away; none of these is beyond 0700.
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(path), fi.Mode(), want)
		}
	}
}

// A new process on an existing log continues its chain: the file is the
// same as one written by a single process.
func TestAppendContinuesTheChain(t *testing.T) {
	s := logSettings(t)
	h := newHarness()
	h.mustStart(t, s)
	observeN(h, 0, 3)
	h.mustStop(t)

	again := newHarness()
	again.ticks.Store(h.ticks.Load()) // the same clock, a new process
	again.mustStart(t, s)
	if tip := again.file.tip(); tip.Seq != 3 {
		t.Errorf("resumed at seq %d, want 3", tip.Seq)
	}
	observeN(again, 3, 5)
	again.mustStop(t)

	one := newHarness()
	oneS := logSettings(t)
	one.mustStart(t, oneS)
	observeN(one, 0, 5)
	one.mustStop(t)

	got, _ := os.ReadFile(s.path)
	want, _ := os.ReadFile(oneS.path)
	if !bytes.Equal(got, want) {
		t.Errorf("continued log:\n%s\nwritten at once:\n%s", got, want)
	}
	if lines := readLines(t, s.path); lines[4].Seq != 5 || lines[3].Prev != lines[2].Hash {
		t.Errorf("the chain does not go on across the restart")
	}
}

// The host may apply the plugin again on the same process: the log is
// closed and reopened, and its chain goes on.
func TestApplyAgain(t *testing.T) {
	s := logSettings(t)
	h := newHarness()
	h.mustStart(t, s)
	observeN(h, 0, 2)
	h.mustStart(t, s)
	observeN(h, 2, 4)
	h.mustStop(t)
	if lines := readLines(t, s.path); len(lines) != 4 {
		t.Errorf("%d lines, want 4", len(lines))
	}
}

func TestRefusesABrokenLog(t *testing.T) {
	// A good three-line log to damage.
	good := func(t *testing.T) []byte {
		h := newHarness()
		s := logSettings(t)
		h.mustStart(t, s)
		observeN(h, 0, 3)
		h.mustStop(t)
		data, _ := os.ReadFile(s.path)
		return data
	}(t)
	ls := bytes.SplitAfter(good, []byte("\n"))
	for _, tc := range []struct {
		name string
		log  []byte
		want string
	}{
		{"byte changed in line 2", bytes.Replace(good, []byte(`"call-1"`), []byte(`"call-9"`), 1), "line 2 (hash does not match"},
		{"line 2 deleted", append(bytes.Clone(ls[0]), ls[2]...), "line 2 (seq is 3, want 2"},
		{"not a log", []byte("hello\n"), "line 1 (bad JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := logSettings(t)
			if err := os.WriteFile(s.path, tc.log, 0o600); err != nil {
				t.Fatal(err)
			}
			h := newHarness()
			err := h.start(s, hclog.NewNullLogger())
			if err == nil {
				h.mustStop(t)
				t.Fatal("started on a broken log")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "refusing to append") {
				t.Errorf("error %q; want it to contain %q and say it refuses", err, tc.want)
			}
			if after, _ := os.ReadFile(s.path); !bytes.Equal(after, tc.log) {
				t.Error("the broken log was changed")
			}
			observeN(h, 0, 1) // no log open: logged, not written, no panic
		})
	}
}

func TestFsyncPoliciesWriteTheSameContent(t *testing.T) {
	const n = 20
	var first []byte
	for _, tc := range []struct {
		cfg       Config
		wantSyncs int64 // before stop, which always fsyncs once more
	}{
		{Config{}, n},
		{Config{Fsync: "always"}, n},
		{Config{Fsync: "interval", FsyncInterval: "1h"}, 0},
		{Config{Fsync: "interval"}, -1}, // 1s: any number, timing-dependent
		{Config{Fsync: "never"}, 0},
	} {
		t.Run(fmt.Sprintf("%s %s", tc.cfg.Fsync, tc.cfg.FsyncInterval), func(t *testing.T) {
			tc.cfg.Path = filepath.Join(t.TempDir(), "audit.log")
			s, err := tc.cfg.settings()
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness()
			h.mustStart(t, s)
			observeN(h, 0, n)
			if got := h.syncs.Load(); tc.wantSyncs >= 0 && got != tc.wantSyncs {
				t.Errorf("%d fsyncs while writing, want %d", got, tc.wantSyncs)
			}
			before := h.syncs.Load()
			h.mustStop(t)
			if got := h.syncs.Load() - before; got != 1 {
				t.Errorf("stop made %d fsyncs, want 1", got)
			}
			data, _ := os.ReadFile(s.path)
			if first == nil {
				first = data
			} else if !bytes.Equal(data, first) {
				t.Errorf("content differs from the first policy's:\n%s\n%s", data, first)
			}
		})
	}
}

// With fsync = interval lines reach the disk without a stop, and not once
// per line.
func TestFsyncInterval(t *testing.T) {
	cfg := Config{Path: filepath.Join(t.TempDir(), "audit.log"), Fsync: "interval", FsyncInterval: "20ms"}
	s, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness()
	h.mustStart(t, s)
	defer h.mustStop(t)
	observeN(h, 0, 100)
	testkit.WaitFor(t, 5*time.Second, "an fsync with fsync_interval = 20ms", func() bool { return h.syncs.Load() > 0 })
	if got := h.syncs.Load(); got >= 100 {
		t.Errorf("%d fsyncs for 100 lines: one per line", got)
	}
	// Nothing written since: no more fsyncs.
	time.Sleep(60 * time.Millisecond)
	settled := h.syncs.Load()
	time.Sleep(60 * time.Millisecond)
	if got := h.syncs.Load(); got != settled {
		t.Errorf("fsyncs went on with nothing written: %d then %d", settled, got)
	}
}

func TestRecordArguments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record bool
		args   string
		want   string // the arguments member; "" for none
	}{
		{"off", false, `{"a":1,"secret":"hunter2"}`, ""},
		{"on", true, `{"a":1,"secret":"hunter2"}`, `{"a":1,"secret":"hunter2"}`},
		{"on, not JSON", true, `{"secret":hunter2`, `"{\"secret\":hunter2"`},
		{"off, not JSON", false, `{"secret":hunter2`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := logSettings(t)
			s.record = tc.record
			h := newHarness()
			h.mustStart(t, s)
			call := &sdk.Call{Execution: sdk.Execution{ID: "c", Name: "add", Caller: "cli", Arguments: []byte(tc.args)}}
			h.observeWithReceipt(context.Background(), call, sdk.ToolResult{OK: true})
			h.mustStop(t)

			data, _ := os.ReadFile(s.path)
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			if got := string(m["arguments"]); got != tc.want {
				t.Errorf("arguments = %s, want %s", got, tc.want)
			}
			if !tc.record && bytes.Contains(data, []byte("hunter2")) {
				t.Error("the arguments leaked into the log")
			}
			if got, want := string(m["args_sha256"]), `"`+auditlog.Digest([]byte(tc.args))+`"`; got != want {
				t.Errorf("args_sha256 = %s, want %s", got, want)
			}
		})
	}
}

func TestConcurrentObserve(t *testing.T) {
	const goroutines, each = 8, 25
	for _, policy := range []string{"always", "interval", "never"} {
		t.Run(policy, func(t *testing.T) {
			s, err := Config{Path: filepath.Join(t.TempDir(), "audit.log"), Fsync: policy}.settings()
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness()
			h.mustStart(t, s)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() { observeN(h, g*each, (g+1)*each) })
			}
			wg.Wait()
			h.mustStop(t)
			lines := readLines(t, s.path)
			if len(lines) != goroutines*each {
				t.Fatalf("%d lines, want %d", len(lines), goroutines*each)
			}
			ids := map[string]bool{}
			for i, l := range lines {
				ids[l.ID] = true
				if i > 0 && l.Time.Before(lines[i-1].Time) {
					t.Errorf("line %d goes back in time", i+1)
				}
			}
			if len(ids) != goroutines*each {
				t.Errorf("%d distinct calls, want %d", len(ids), goroutines*each)
			}
		})
	}
}

func TestObserveAfterStop(t *testing.T) {
	s := logSettings(t)
	h := newHarness()
	h.mustStart(t, s)
	observeN(h, 0, 1)
	h.mustStop(t)
	h.mustStop(t) // twice is fine
	observeN(h, 1, 2)
	if lines := readLines(t, s.path); len(lines) != 1 {
		t.Errorf("%d lines, want 1", len(lines))
	}
}

func TestNotARegularFile(t *testing.T) {
	s := logSettings(t)
	s.path = t.TempDir()
	if err := newHarness().start(s, hclog.NewNullLogger()); err == nil {
		t.Error("started on a folder")
	}
}

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want settings
		errs []string
	}{
		{"defaults", Config{Path: "a.log"}, settings{path: "a.log", fsync: fsyncAlways}, nil},
		{"interval default", Config{Path: "a.log", Fsync: "interval"}, settings{path: "a.log", fsync: fsyncInterval, interval: time.Second}, nil},
		{"interval", Config{Path: "a.log", Fsync: "interval", FsyncInterval: "250ms", RecordArguments: true},
			settings{path: "a.log", fsync: fsyncInterval, interval: 250 * time.Millisecond, record: true}, nil},
		{"never", Config{Path: "a.log", Fsync: "never"}, settings{path: "a.log", fsync: fsyncNever}, nil},
		{"no path", Config{Path: " "}, settings{}, []string{"path is required"}},
		{"bad policy", Config{Path: "a.log", Fsync: "sometimes"}, settings{}, []string{`fsync = "sometimes": want "always", "interval" or "never"`}},
		{"interval without policy", Config{Path: "a.log", FsyncInterval: "1s"}, settings{}, []string{`fsync_interval is set but fsync is "always"`}},
		{"bad interval", Config{Path: "a.log", Fsync: "interval", FsyncInterval: "soon"}, settings{}, []string{`fsync_interval = "soon"`}},
		{"zero interval", Config{Path: "a.log", Fsync: "interval", FsyncInterval: "0s"}, settings{}, []string{`fsync_interval = "0s"`}},
		{"every problem", Config{Fsync: "x", FsyncInterval: "-1s"}, settings{}, []string{"path is required", `fsync = "x"`, "fsync_interval is set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.settings()
			if len(tc.errs) == 0 {
				if err != nil || got != tc.want {
					t.Errorf("settings = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("settings = %+v; want an error", got)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// The package doc's HCL example, as the host hands it over in JSON, decodes
// strictly into Config: the names in the doc are the names in the schema.
func TestConfigNames(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"path":"var/audit/calls.log","fsync":"interval","fsync_interval":"1s","record_arguments":false}`))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.settings(); err != nil {
		t.Fatal(err)
	}
}

func TestPluginDefinition(t *testing.T) {
	p := newPlugin()
	if p.Name != "audit" || len(p.Inject) != 1 || p.Inject[0] != "tools" || p.Apply == nil || p.Stop == nil {
		t.Errorf("plugin = %+v", p)
	}
	if err := p.Stop(context.Background()); err != nil { // before any apply
		t.Error(err)
	}
}

// The host sends a critical plugin's results again when the process died
// before acknowledging them; the new process skips those it finds at the
// end of the log.
func TestRedeliveredResultsAreSkipped(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "after a stop", true: "after a crash"}[crash], func(t *testing.T) {
			s := logSettings(t) // fsync = always: no ticker to leak in the crash
			first := newHarness()
			first.mustStart(t, s)
			observeN(first, 0, 3)
			if crash {
				// What the process's death leaves: no final fsync, the
				// descriptor (and its lock) gone.
				if err := first.file.f.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				first.mustStop(t)
			}

			next := newHarness()
			next.ticks.Store(100)
			next.mustStart(t, s)
			observeN(next, 1, 4) // 1 and 2 again, and 3
			// An id the log does not hold near its end is written.
			call, r := result(4)
			call.ID, r.ID = "", ""
			next.observeWithReceipt(context.Background(), call, r)
			next.observeWithReceipt(context.Background(), call, r) // no id: never skipped
			next.mustStop(t)

			var got []string
			for _, l := range readLines(t, s.path) { // verifies
				got = append(got, l.ID)
			}
			if want := []string{"call-0", "call-1", "call-2", "call-3", "", ""}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("log ids %q, want %q", got, want)
			}
		})
	}
}

// Only the last recentIDs lines count: an id further back is a new call
// (ids are unique per host; this is a bound, not a rule).
func TestRecentIDsAreTheTail(t *testing.T) {
	s := logSettings(t)
	s.fsync = fsyncNever
	h := newHarness()
	h.mustStart(t, s)
	observeN(h, 0, recentIDs+1)
	h.mustStop(t)
	h.mustStart(t, s)
	defer h.mustStop(t)
	if n := len(h.file.recent); n != recentIDs {
		t.Errorf("%d recent ids, want %d", n, recentIDs)
	}
	if _, ok := h.file.recent["call-0"]; ok {
		t.Error("the first line's id is among the recent ones")
	}
	if _, ok := h.file.recent[fmt.Sprintf("call-%d", recentIDs)]; !ok {
		t.Error("the last line's id is not among the recent ones")
	}
}

// A log that ends in part of a line (a write a full disk or a crash cut
// short) is not tampering: the part is removed, with a warning, and the
// chain continues after the last whole line.
func TestRemovesAPartialLastLine(t *testing.T) {
	good := func(t *testing.T) []byte {
		h := newHarness()
		s := logSettings(t)
		h.mustStart(t, s)
		observeN(h, 0, 3)
		h.mustStop(t)
		data, _ := os.ReadFile(s.path)
		return data
	}(t)
	for _, tc := range []struct {
		name string
		log  []byte
	}{
		{"last line cut short", good[:len(good)-20]},
		{"no final newline", good[:len(good)-1]},
		{"only part of a first line", []byte(`{"seq":1,"ti`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := logSettings(t)
			if err := os.WriteFile(s.path, tc.log, 0o600); err != nil {
				t.Fatal(err)
			}
			logs := &testkit.Buffer{}
			h := newHarness()
			if err := h.start(s, bufferLogger(logs)); err != nil {
				t.Fatal(err)
			}
			observeN(h, 3, 5)
			h.mustStop(t)
			want := "call-0 call-1 call-3 call-4"
			if tc.name == "only part of a first line" {
				want = "call-3 call-4"
			}
			if got := logIDs(t, s.path); got != want {
				t.Errorf("log ids %q, want %q", got, want)
			}
			if !strings.Contains(logs.String(), "ended in part of a line") {
				t.Errorf("no warning:\n%s", logs.String())
			}
		})
	}
}

// failingFsync fails while fail is set, as a full disk makes fsync (or a
// write) fail; the line it was for must not stay in the log.
type failingFsync struct {
	fail  atomic.Bool
	calls atomic.Int64
}

func (f *failingFsync) sync(file *os.File) error {
	f.calls.Add(1)
	if f.fail.Load() {
		return syscall.ENOSPC
	}
	return file.Sync()
}

// TestWriteFailureHoldsTheResultAndDenies: a line the log cannot take is
// taken back, the result is held (observe does not return, so it is not
// acknowledged), calls are denied and the host told; once the log can be
// written again, the held result is written, observe returns, the guard
// goes and the host hears the problem is over. The log verifies throughout.
func TestWriteFailureHoldsTheResultAndDenies(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail_open=%v", failOpen), func(t *testing.T) {
			s := logSettings(t)
			s.failOpen = failOpen
			var fs failingFsync
			var mu sync.Mutex
			var problems []string
			var reason func() string
			undone := 0
			h := newHarness()
			h.fsync = fs.sync
			h.setHost(failureHost{
				deny: func(ctx context.Context, r func() string) (func(context.Context) error, error) {
					mu.Lock()
					defer mu.Unlock()
					reason = r
					return func(context.Context) error { mu.Lock(); undone++; mu.Unlock(); return nil }, nil
				},
				report: func(ctx context.Context, p string) error {
					mu.Lock()
					defer mu.Unlock()
					problems = append(problems, p)
					return nil
				},
			})
			h.mustStart(t, s)
			observeN(h, 0, 2)

			fs.fail.Store(true)
			done := observeAsync(context.Background(), h, 2, 4)
			// The first attempt and a few retries.
			testkit.WaitFor(t, 10*time.Second, "retries", func() bool { return fs.calls.Load() >= 5 })
			stillWaiting(t, done, "observe while the log cannot be written")
			if got := logIDs(t, s.path); got != "call-0 call-1" {
				t.Errorf("log ids while failing %q: a failed line stayed", got)
			}
			mu.Lock()
			if failOpen != (reason == nil) {
				t.Errorf("fail_open=%v, but a guard was added: %v", failOpen, reason != nil)
			}
			if reason != nil && !strings.Contains(reason(), "cannot be written") {
				t.Errorf("the guard denies with %q", reason())
			}
			if len(problems) == 0 || !strings.Contains(problems[0], "no space left on device") || !strings.Contains(problems[0], s.path) {
				t.Errorf("problems reported: %q", problems)
			}
			mu.Unlock()

			fs.fail.Store(false)
			waitDone(t, done, "observe once the log can be written")
			observeN(h, 4, 5)
			h.mustStop(t)
			if got := logIDs(t, s.path); got != "call-0 call-1 call-2 call-3 call-4" {
				t.Errorf("log ids %q", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if reason != nil && (reason() != "" || undone != 1) {
				t.Errorf("after recovery the guard denies %q, undone %d times", reason(), undone)
			}
			if problems[len(problems)-1] != "" {
				t.Errorf("the host was not told the problem is over: %q", problems)
			}
		})
	}
}

// audit_head answers the seq and hash of the log's last line.
func TestHead(t *testing.T) {
	h := newHarness()
	s := logSettings(t)
	if _, err := h.head(); err == nil {
		t.Error("a head before the log is open")
	}
	h.mustStart(t, s)
	observeN(h, 0, 3)
	head, err := h.head()
	h.mustStop(t)
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, s.path)
	if last := lines[len(lines)-1]; head.Seq != 3 || head.Hash != last.Hash || head.Path != s.path {
		t.Errorf("head %+v, want seq 3 and hash %s", head, last.Hash)
	}
}

// TestRecordArgumentsRedacted: record_arguments = "redacted" writes the
// arguments with each credential in their strings replaced by the
// scanner's marker, the rest as it was; args_sha256 is still the digest of
// the arguments as the host sent them. Any other value is refused.
func TestRecordArgumentsRedacted(t *testing.T) {
	f := fake.New(7)
	token := f.GitHubToken("ghp_")
	s, err := Config{Path: filepath.Join(t.TempDir(), "audit.log"), RecordArguments: "redacted"}.settings()
	if err != nil {
		t.Fatal(err)
	}
	args := `{"path":"notes.md","content":"token ` + token + ` here","n":3}`
	h := newHarness()
	h.mustStart(t, s)
	call := &sdk.Call{Execution: sdk.Execution{ID: "c", Name: "write_file", Caller: "cli", Arguments: []byte(args)}}
	h.observeWithReceipt(context.Background(), call, sdk.ToolResult{OK: true})
	h.mustStop(t)
	data, _ := os.ReadFile(s.path)
	if bytes.Contains(data, []byte(token)) {
		t.Fatal("the credential is in the log")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if got, want := string(m["arguments"]), `{"path":"notes.md","content":"token [redacted: github-token] here","n":3}`; got != want {
		t.Errorf("arguments = %s, want %s", got, want)
	}
	if got, want := string(m["args_sha256"]), `"`+auditlog.Digest([]byte(args))+`"`; got != want {
		t.Errorf("args_sha256 = %s, want %s", got, want)
	}
	for _, bad := range []any{"yes", 1.0} {
		if _, err := (Config{Path: "a.log", RecordArguments: bad}).settings(); err == nil || !strings.Contains(err.Error(), `record_arguments = `) {
			t.Errorf("record_arguments = %v: %v", bad, err)
		}
	}
}
