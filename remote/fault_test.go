package remote_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
)

// callRecord is one call made while a plugin was killed.
type callRecord struct {
	start, end time.Time
	tool, args string
	// deny: the victim's rule denies the call.
	deny bool
	r    pipeline.Result
}

// killRole is what the killed plugin owns, and what its death must mean
// for the calls in flight into it.
type killRole struct {
	name   string
	victim conformance.PluginSpec
	// next returns the i-th call of a caller, and whether the victim's rule
	// denies it.
	next func(i int) (tool, args string, deny bool)
	// inFlight is the code of a call in flight into the victim when it
	// dies, and failed what its message says.
	inFlight pipeline.Code
	failed   string
	// codes are the codes a call may get at all ("" is success).
	codes []pipeline.Code
	// violates says whether an OK result breaks the victim's rule.
	violates func(rec callRecord) bool
	// retried says a critical victim's listener asks a call in flight at
	// its death again in its next process (solo.go), so such a call may
	// be served rather than fail.
	retried bool
}

// The victim's listeners care about add only; the bystander's echo is
// outside their interest, so it measures whether the host keeps serving.
var killRoles = []killRole{
	{
		name: "tool",
		victim: conformance.PluginSpec{Tools: []conformance.ToolSpec{{
			Name: "work", Description: "Works for a while.", Body: conformance.BodySleep, Sleep: 20 * time.Millisecond,
		}}},
		next:     func(int) (string, string, bool) { return "work", `{}`, false },
		inFlight: pipeline.CodeToolError, failed: "plugin victim: tool work",
		codes: []pipeline.Code{"", pipeline.CodeToolError, pipeline.CodeUnknownTool},
	},
	{
		name: "guard",
		victim: conformance.PluginSpec{Guards: []conformance.GuardSpec{{
			Behaviour: conformance.GuardDenyWhenGreater, Field: "a", Limit: 100, Reason: "victim: a is over 100",
			Sleep: 10 * time.Millisecond, Tools: []string{"add"},
		}}},
		next: func(i int) (string, string, bool) {
			if i%2 == 0 {
				return "add", `{"a":999,"b":1}`, true
			}
			return "add", `{"a":1,"b":1}`, false
		},
		inFlight: pipeline.CodeDenied, failed: "guard of victim failed", retried: true,
		codes:    []pipeline.Code{"", pipeline.CodeDenied},
		violates: func(rec callRecord) bool { return rec.deny },
	},
	{
		name: "pre-execute",
		victim: conformance.PluginSpec{Pre: []conformance.PreSpec{{
			Behaviour: conformance.PreDenyWhenNegative, Field: "a", Reason: "victim: a is negative",
			Sleep: 10 * time.Millisecond, Tools: []string{"add"},
		}}},
		next: func(i int) (string, string, bool) {
			if i%2 == 0 {
				return "add", `{"a":-1,"b":1}`, true
			}
			return "add", `{"a":1,"b":1}`, false
		},
		inFlight: pipeline.CodeDenied, failed: "pre-execute listener of victim failed", retried: true,
		codes:    []pipeline.Code{"", pipeline.CodeDenied},
		violates: func(rec callRecord) bool { return rec.deny },
	},
	{
		name: "post-execute",
		victim: conformance.PluginSpec{Post: []conformance.PostSpec{{
			Behaviour: conformance.PostReplace, Value: `"[redacted]"`,
			Sleep: 10 * time.Millisecond, Tools: []string{"add"},
		}}},
		next:     func(i int) (string, string, bool) { return "add", fmt.Sprintf(`{"a":%d,"b":1}`, i), false },
		inFlight: pipeline.CodeBlocked, failed: "post-execute listener of victim failed",
		codes:    []pipeline.Code{"", pipeline.CodeBlocked, pipeline.CodeDenied},
		violates: func(rec callRecord) bool { return valueOf(rec.r) != `"[redacted]"` },
	},
}

// TestKillWithCallsInFlight SIGKILLs a plugin that owns a tool, a guard, a
// pre-execute or a post-execute listener while several callers call
// through it in a loop, and checks that
//   - every call returns, and promptly (each has a 10s context; none may be
//     ABORTED by it, the callers must all end, and the calls in flight at
//     the kill return within 2s of it),
//   - a call in flight into the dead process gets the contract's code:
//     TOOL_ERROR for a tool, DENIED for a guard or a pre-execute listener,
//     BLOCKED for a post-execute listener,
//   - no call the victim's rule denies is allowed: never, when the victim is
//     critical (the pipeline is held until it is back); when it is not, no
//     such call that started before the kill (later ones may pass: an
//     unloaded rule is gone),
//   - the host keeps serving another plugin's tool throughout (a critical
//     victim holds it, naming the victim, until it is back),
//   - the manager restarts the victim and its rule applies again.
func TestKillWithCallsInFlight(t *testing.T) {
	for _, role := range killRoles {
		for _, critical := range []bool{false, true} {
			if role.name == "tool" && critical {
				continue
			}
			name := role.name
			if critical {
				name += "_critical"
			}
			t.Run(name, func(t *testing.T) { testKill(t, role, critical) })
		}
	}
}

func testKill(t *testing.T, role killRole, critical bool) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "bystander", Tools: []conformance.ToolSpec{addTool(""), echoTool("echo")}}, pluginConfig{})
	victim := role.victim
	victim.Name, victim.Critical = "victim", critical
	mustLoad(t, h, victim, pluginConfig{})
	pid := pidOf(t, h.m, "victim")

	const callers = 6
	// Per caller: the loop is bounded in count as well as in time. Calls a
	// critical victim's hold denies take microseconds, hence the headroom.
	const maxCalls = 100_000
	var (
		mu      sync.Mutex
		records []callRecord
		done    atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	worker := func(next func(i int) (string, string, bool)) {
		defer wg.Done()
		for i := 0; i < maxCalls; i++ {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			tool, args, deny := next(i)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			start := time.Now()
			r := call(cctx, h, tool, args)
			end := time.Now()
			cancel()
			mu.Lock()
			records = append(records, callRecord{start: start, end: end, tool: tool, args: args, deny: deny, r: r})
			mu.Unlock()
			done.Add(1)
		}
	}
	wg.Add(callers + 1)
	for w := range callers {
		go worker(func(i int) (string, string, bool) { return role.next(i + w) })
	}
	go worker(func(int) (string, string, bool) { return "echo", `{"x":1}`, false })
	stopped := false
	finish := func() {
		if !stopped {
			stopped = true
			close(stop)
		}
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatal("callers still blocked 20s after they were stopped: a call hangs")
		}
	}
	defer finish()

	eventually(t, "calls before the kill", 20*time.Second, func() bool { return done.Load() >= 60 })
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill victim: %v", err)
	}
	if err := waitActive(h.m, h.k, "victim", pid, 20*time.Second); err != nil {
		t.Fatalf("victim: %v", err)
	}
	back := time.Now()
	after := done.Load()
	eventually(t, "calls after the restart", 20*time.Second, func() bool { return done.Load() >= after+60 })
	finish()
	t.Logf("%d calls; the victim was back %v after the kill", len(records), back.Sub(killed).Round(time.Millisecond))

	inFlight := 0
	var slowest time.Duration // of the calls in flight at the kill, the last to return
	for _, rec := range records {
		if rec.start.Before(killed) && rec.end.After(killed) {
			slowest = max(slowest, rec.end.Sub(killed))
		}
		what := fmt.Sprintf("%s %s (started %v after the kill): %s", rec.tool, rec.args, rec.start.Sub(killed), describe(rec.r))
		code := rec.r.Code()
		if code == pipeline.CodeAborted {
			t.Errorf("%s: the call ran into its 10s context: it hung", what)
			continue
		}
		alive := rec.end.Before(killed) || rec.start.After(back)
		if rec.tool == "echo" {
			// The bystander's tool, outside the victim's interest: served
			// throughout, but for a critical victim's hold while it is out.
			switch {
			case rec.r.OK:
			case critical && !alive && code == pipeline.CodeDenied && rec.r.DecidedBy == "victim":
			default:
				t.Errorf("bystander: %s", what)
			}
			continue
		}
		allowed := false
		for _, c := range role.codes {
			allowed = allowed || c == code
		}
		if !allowed {
			t.Errorf("%s: code %q is not one the contract allows here (%q)", what, code, role.codes)
		}
		if code == role.inFlight && strings.Contains(rec.r.Error.Message, role.failed) {
			inFlight++
			if rec.start.After(back) {
				t.Errorf("%s: failed as a call into a dead process after the victim was back", what)
			}
		}
		if code == pipeline.CodeDenied && role.inFlight != pipeline.CodeDenied && !critical {
			t.Errorf("%s: denied without a denying rule", what)
		}
		switch {
		case alive && rec.deny && (code != pipeline.CodeDenied || rec.r.DecidedBy != "victim"):
			t.Errorf("%s: not denied by the victim while it was alive", what)
		case alive && !rec.deny && !rec.r.OK:
			t.Errorf("%s: failed while the victim was alive", what)
		}
		if rec.r.OK && role.violates != nil && role.violates(rec) && (critical || rec.start.Before(killed)) {
			t.Errorf("%s: allowed a call the victim's rule denies", what)
		}
	}
	if inFlight == 0 && !(critical && role.retried) {
		t.Errorf("no call was in flight into the victim when it died (want at least one %s %q)", role.inFlight, role.failed)
	}
	t.Logf("%d calls into the dead victim failed as %s; the calls in flight at the kill had all returned %v after it", inFlight, role.inFlight, slowest.Round(time.Millisecond))
	if slowest > 2*time.Second {
		t.Errorf("a call in flight at the kill returned %v after it, want promptly", slowest)
	}

	// The victim is back and its rule with it.
	switch role.name {
	case "tool":
		wantOK(t, call(ctx, h, "work", `{}`), `"slept"`)
	case "guard":
		wantCode(t, call(ctx, h, "add", `{"a":999,"b":1}`), pipeline.CodeDenied, "victim: a is over 100")
	case "pre-execute":
		wantCode(t, call(ctx, h, "add", `{"a":-1,"b":1}`), pipeline.CodeDenied, "victim: a is negative")
	case "post-execute":
		wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), `"[redacted]"`)
	}
	wantOK(t, call(ctx, h, "echo", `{"x":1}`), `{"x":1}`)
	if st, _ := status(h.m, "victim"); st.Restarts != 1 {
		t.Errorf("victim restarted %d times, want 1", st.Restarts)
	}
}
