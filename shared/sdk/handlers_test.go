package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func TestExecuteTool(t *testing.T) {
	var calls atomic.Int32
	var seen *Call
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.RegisterTool(ctx, Tool{Name: "add", Description: "adds", Parameters: `{"type":"object"}`,
			Execute: func(_ context.Context, call *Call) (any, error) {
				calls.Add(1)
				seen = call
				var a addArgs
				if err := call.Bind(&a); err != nil {
					return nil, err
				}
				switch {
				case a.A == 13:
					panic("unlucky")
				case a.A < 0:
					return nil, errors.New("kaboom")
				}
				return a.A + a.B, nil
			}})
		return err
	})
	handler := h.rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest).GetHandlerId()
	ctx := testCtx(t)
	run := func(args string) *pb.ExecuteToolResponse {
		t.Helper()
		resp, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("add", args)})
		if err != nil {
			t.Fatalf("ExecuteTool(%s): %v", args, err)
		}
		return resp
	}

	t.Run("result", func(t *testing.T) {
		if resp := run(`{"a":2,"b":3}`); string(resp.GetValueJson()) != "5" || resp.GetError() != "" {
			t.Errorf("got %v, want value 5", resp)
		}
		if seen.ID != "call-1" || seen.Caller != "tester" || seen.Tool.Owner != "test" || string(seen.Arguments) != `{"a":2,"b":3}` {
			t.Errorf("the tool saw %+v", seen.Execution)
		}
	})
	t.Run("its own error, verbatim", func(t *testing.T) {
		if resp := run(`{"a":-1}`); resp.GetError() != "kaboom" {
			t.Errorf("error = %q, want kaboom", resp.GetError())
		}
	})
	t.Run("a panic is a failure and the plugin keeps serving", func(t *testing.T) {
		if resp := run(`{"a":13}`); !strings.Contains(resp.GetError(), `panic in tool "add": unlucky`) {
			t.Errorf("error = %q, want the panic", resp.GetError())
		}
		if resp := run(`{"a":1,"b":1}`); string(resp.GetValueJson()) != "2" {
			t.Errorf("after the panic got %v, want 2", resp)
		}
	})
	t.Run("unknown handler id", func(t *testing.T) {
		_, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: "nope", Execution: execution("add", "{}")})
		if status.Code(err) != codes.NotFound {
			t.Errorf("err = %v, want NotFound", err)
		}
	})
	if calls.Load() != 4 {
		t.Errorf("tool ran %d times, want 4", calls.Load())
	}
}

func TestExecuteToolCancellation(t *testing.T) {
	started := make(chan struct{}, 1)
	toolErr := make(chan error, 1)
	deadline := make(chan time.Time, 1)
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.RegisterTool(ctx, Tool{Name: "wait", Description: "waits for its context",
			Execute: func(ctx context.Context, _ *Call) (any, error) {
				d, _ := ctx.Deadline()
				deadline <- d
				started <- struct{}{}
				<-ctx.Done()
				toolErr <- ctx.Err()
				return nil, ctx.Err()
			}})
		return err
	})
	handler := h.rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest).GetHandlerId()

	t.Run("the host cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		errc := make(chan error, 1)
		go func() {
			_, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("wait", "{}")})
			errc <- err
		}()
		<-started
		<-deadline
		cancel()
		select {
		case err := <-toolErr:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("tool's ctx error = %v, want Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("cancelling the host's call did not cancel the tool's context")
		}
		if status.Code(<-errc) != codes.Canceled {
			t.Error("the host's call was not cancelled")
		}
	})
	t.Run("the deadline passes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(testCtx(t), 100*time.Millisecond)
		defer cancel()
		want, _ := ctx.Deadline()
		resp, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("wait", "{}")})
		// The plugin runs its own timer for the deadline: its answer (the
		// tool's "context deadline exceeded") can beat gRPC's own
		// DEADLINE_EXCEEDED to the caller. Either says the deadline passed.
		if status.Code(err) != codes.DeadlineExceeded && (err != nil || !strings.Contains(resp.GetError(), context.DeadlineExceeded.Error())) {
			t.Errorf("err = %v, response error %q, want DeadlineExceeded", err, resp.GetError())
		}
		<-started
		if got := <-deadline; got.IsZero() || got.After(want.Add(time.Second)) {
			t.Errorf("tool's deadline = %v, want about %v", got, want)
		}
		if err := <-toolErr; !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Errorf("tool's ctx error = %v", err)
		}
	})
}

func TestOversizedResult(t *testing.T) {
	const limit = 64 << 10
	h := applyWith(t, harnessOptions{maxBytes: limit}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.RegisterTool(ctx, Tool{Name: "big", Description: "returns too much",
			Execute: func(_ context.Context, call *Call) (any, error) {
				var n int
				_ = call.Bind(&n)
				return strings.Repeat("x", n), nil
			}})
		return err
	})
	handler := h.rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest).GetHandlerId()
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		size int
		want string
	}{
		{name: "under the limit", size: limit / 2},
		{name: "over the limit is a clear error, not a transport error", size: 2 * limit,
			want: `result of tool "big" is 131078 bytes, over the 65536-byte message limit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := json.Marshal(tc.size)
			resp, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("big", string(args))})
			if err != nil {
				t.Fatalf("transport error: %v", err)
			}
			if resp.GetError() != tc.want {
				t.Errorf("error = %q, want %q", resp.GetError(), tc.want)
			}
			if tc.want == "" && len(resp.GetValueJson()) != tc.size+2 {
				t.Errorf("value has %d bytes", len(resp.GetValueJson()))
			}
		})
	}
}

func TestPreExecute(t *testing.T) {
	var (
		filter, wrapOverride, wrapPass, wrapTwice string
		wrapCalls                                 atomic.Int32
	)
	h := applyWith(t, harnessOptions{host: func(rec *record) *fakeHost {
		fh := recordingHost(rec)
		fh.next = func(_ context.Context, req *pb.NextRequest) (*pb.NextResponse, error) {
			rec.mu.Lock()
			rec.nexts = append(rec.nexts, req.GetCallToken())
			rec.mu.Unlock()
			return &pb.NextResponse{Answer: &pb.NextResponse_PreExecute{PreExecute: &pb.Decision{
				Verdict: pb.Verdict_VERDICT_DENY, Reason: "inner says no (" + req.GetCallToken() + ")"}}}, nil
		}
		return fh
	}}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		var err error
		reg := func(l PreExecuteListener) string {
			if err != nil {
				return ""
			}
			_, err = p.OnPreExecute(ctx, l)
			return l.Name
		}
		filter = reg(PreExecuteListener{Name: "no-negatives", Tools: []string{"add"}, Filter: func(_ context.Context, c *Call) (Decision, error) {
			var a addArgs
			if err := c.Bind(&a); err != nil {
				return Decision{}, err
			}
			switch {
			case a.A < 0:
				return Deny("a is negative"), nil
			case a.A == 0:
				return Decision{}, nil // forgot to answer
			case a.A == 13:
				panic("unlucky")
			case a.A > 100:
				return Ask("really?"), nil
			}
			return Pass(), nil
		}})
		wrapOverride = reg(PreExecuteListener{Name: "override", Wrap: func(ctx context.Context, _ *Call, next NextDecision) (Decision, error) {
			d, err := next(ctx)
			if err != nil {
				return Decision{}, err
			}
			if d.Verdict == wire.VerdictDeny {
				return Allow(), nil
			}
			return d, nil
		}})
		wrapPass = reg(PreExecuteListener{Name: "pass", Wrap: func(context.Context, *Call, NextDecision) (Decision, error) {
			wrapCalls.Add(1)
			return Pass(), nil
		}})
		wrapTwice = reg(PreExecuteListener{Name: "twice", Wrap: func(ctx context.Context, _ *Call, next NextDecision) (Decision, error) {
			if _, err := next(ctx); err != nil {
				return Decision{}, err
			}
			return next(ctx)
		}})
		return err
	})
	handlers := map[string]*pb.ListenRequest{}
	for _, r := range h.rec.registrations() {
		l := r.req.(*pb.ListenRequest)
		handlers[l.GetName()] = l
	}
	if l := handlers[filter]; l.GetStage() != pb.Stage_STAGE_PRE_EXECUTE || l.GetMode() != pb.ListenMode_LISTEN_MODE_FILTER ||
		strings.Join(l.GetTools(), ",") != "add" {
		t.Errorf("filter registration = %v", l)
	}
	if l := handlers[wrapOverride]; l.GetMode() != pb.ListenMode_LISTEN_MODE_WRAP {
		t.Errorf("wrapper registration = %v", l)
	}
	ctx := testCtx(t)
	call := func(name, args, token string) *pb.PreExecuteResponse {
		t.Helper()
		resp, err := h.plugin.PreExecute(ctx, &pb.PreExecuteRequest{HandlerId: handlers[name].GetHandlerId(), Execution: execution("add", args), CallToken: token})
		if err != nil {
			t.Fatalf("PreExecute: %v", err)
		}
		return resp
	}
	decision := func(v pb.Verdict, reason string) *pb.Decision { return &pb.Decision{Verdict: v, Reason: reason} }

	for _, tc := range []struct {
		name, listener, args, token string
		want                        *pb.Decision
		wantErr                     string
		wantNext                    []string
	}{
		{name: "filter denies", listener: filter, args: `{"a":-1}`, want: decision(pb.Verdict_VERDICT_DENY, "a is negative")},
		{name: "filter passes", listener: filter, args: `{"a":1}`, want: decision(pb.Verdict_VERDICT_PASS, "")},
		{name: "filter asks", listener: filter, args: `{"a":101}`, want: decision(pb.Verdict_VERDICT_ASK, "really?")},
		{name: "zero decision fails closed", listener: filter, args: `{"a":0}`, wantErr: "returned no decision"},
		{name: "filter panic", listener: filter, args: `{"a":13}`, wantErr: `panic in pre-execute listener "no-negatives": unlucky`},
		{name: "wrapper overrides next", listener: wrapOverride, token: "tok-1",
			want: decision(pb.Verdict_VERDICT_ALLOW, ""), wantNext: []string{"tok-1"}},
		{name: "wrapper pass returns next's answer", listener: wrapPass, token: "tok-2",
			want: decision(pb.Verdict_VERDICT_DENY, "inner says no (tok-2)"), wantNext: []string{"tok-2"}},
		{name: "wrapper calls next twice", listener: wrapTwice, token: "tok-3",
			want: decision(pb.Verdict_VERDICT_DENY, "inner says no (tok-3)"), wantNext: []string{"tok-3", "tok-3"}},
		{name: "wrapper without a call token", listener: wrapOverride, wantErr: "sent no call token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.rec.nextTokens())
			args := tc.args
			if args == "" {
				args = "{}"
			}
			resp := call(tc.listener, args, tc.token)
			if tc.wantErr != "" {
				if !strings.Contains(resp.GetError(), tc.wantErr) {
					t.Errorf("error = %q, want %q", resp.GetError(), tc.wantErr)
				}
				return
			}
			if resp.GetError() != "" || resp.GetDecision().GetVerdict() != tc.want.GetVerdict() || resp.GetDecision().GetReason() != tc.want.GetReason() {
				t.Errorf("got %v, want %v", resp, tc.want)
			}
			if got := h.rec.nextTokens()[before:]; strings.Join(got, ",") != strings.Join(tc.wantNext, ",") {
				t.Errorf("Next saw tokens %v, want %v", got, tc.wantNext)
			}
		})
	}
	if wrapCalls.Load() != 1 {
		t.Errorf("pass wrapper ran %d times", wrapCalls.Load())
	}
}

func TestGuard(t *testing.T) {
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.AddGuard(ctx, Guard{Name: "root", Tools: []string{"delete"}, Check: func(_ context.Context, c *Call) (string, error) {
			var a struct{ Path string }
			if err := c.Bind(&a); err != nil {
				return "", err
			}
			switch a.Path {
			case "/":
				return "refusing to delete the root filesystem", nil
			case "boom":
				panic("guard bug")
			case "err":
				return "", errors.New("cannot tell")
			}
			return "", nil
		}})
		return err
	})
	reg := h.rec.last(t, "AddGuard").req.(*pb.AddGuardRequest)
	if reg.GetName() != "root" || strings.Join(reg.GetTools(), ",") != "delete" {
		t.Errorf("AddGuard request = %v", reg)
	}
	for _, tc := range []struct{ name, path, reason, err string }{
		{name: "denies", path: "/", reason: "refusing to delete the root filesystem"},
		{name: "silent", path: "/srv/data/x"},
		{name: "error", path: "err", err: "cannot tell"},
		{name: "panic", path: "boom", err: `panic in guard "root": guard bug`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.plugin.Guard(testCtx(t), &pb.GuardRequest{HandlerId: reg.GetHandlerId(), Execution: execution("delete", `{"path":"`+tc.path+`"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetReason() != tc.reason || resp.GetError() != tc.err || resp.GetRule() != "root" {
				t.Errorf("got %v, want reason %q error %q rule root", resp, tc.reason, tc.err)
			}
		})
	}
}

func TestWrapExecute(t *testing.T) {
	var attempts atomic.Int32
	h := applyWith(t, harnessOptions{host: func(rec *record) *fakeHost {
		fh := recordingHost(rec)
		fh.next = func(_ context.Context, req *pb.NextRequest) (*pb.NextResponse, error) {
			rec.mu.Lock()
			rec.nexts = append(rec.nexts, req.GetCallToken())
			rec.mu.Unlock()
			out := &pb.Outcome{Ok: true, ValueJson: []byte(`"inner"`)}
			if attempts.Add(1) == 1 {
				out = &pb.Outcome{Error: &pb.ToolError{Code: string(wire.CodeToolError), Message: "flaky"}}
			}
			return &pb.NextResponse{Answer: &pb.NextResponse_Execute{Execute: out}}, nil
		}
		return fh
	}}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		if _, err := p.OnExecute(ctx, ExecuteListener{Name: "cache", Filter: func(_ context.Context, c *Call) (*Outcome, error) {
			switch string(c.Arguments) {
			case `"cached"`:
				out := Success("from cache")
				return &out, nil
			case `"bad"`:
				return &Outcome{}, nil
			}
			return nil, nil
		}}); err != nil {
			return err
		}
		_, err := p.OnExecute(ctx, ExecuteListener{Name: "retry", Wrap: func(ctx context.Context, _ *Call, next NextOutcome) (Outcome, error) {
			out, err := next(ctx)
			if err == nil && !out.OK {
				return next(ctx)
			}
			return out, err
		}})
		return err
	})
	regs := h.rec.registrations()
	cache, retry := regs[0].req.(*pb.ListenRequest), regs[1].req.(*pb.ListenRequest)
	ctx := testCtx(t)
	t.Run("filter passes", func(t *testing.T) {
		resp, err := h.plugin.WrapExecute(ctx, &pb.WrapExecuteRequest{HandlerId: cache.GetHandlerId(), Execution: execution("t", `"miss"`)})
		if err != nil || !resp.GetPass() || resp.GetOutcome() != nil {
			t.Errorf("got %v, %v; want pass", resp, err)
		}
	})
	t.Run("filter answers", func(t *testing.T) {
		resp, err := h.plugin.WrapExecute(ctx, &pb.WrapExecuteRequest{HandlerId: cache.GetHandlerId(), Execution: execution("t", `"cached"`)})
		if err != nil || resp.GetPass() || string(resp.GetOutcome().GetValueJson()) != `"from cache"` || !resp.GetOutcome().GetOk() {
			t.Errorf("got %v, %v", resp, err)
		}
	})
	t.Run("a failed outcome without an error is refused", func(t *testing.T) {
		resp, _ := h.plugin.WrapExecute(ctx, &pb.WrapExecuteRequest{HandlerId: cache.GetHandlerId(), Execution: execution("t", `"bad"`)})
		if !strings.Contains(resp.GetError(), "failed outcome without an error") {
			t.Errorf("got %v", resp)
		}
	})
	t.Run("wrapper retries through next", func(t *testing.T) {
		resp, err := h.plugin.WrapExecute(ctx, &pb.WrapExecuteRequest{HandlerId: retry.GetHandlerId(), Execution: execution("t", `{}`), CallToken: "tok-9"})
		if err != nil || string(resp.GetOutcome().GetValueJson()) != `"inner"` {
			t.Errorf("got %v, %v", resp, err)
		}
		if got := h.rec.nextTokens(); strings.Join(got, ",") != "tok-9,tok-9" {
			t.Errorf("Next tokens = %v", got)
		}
	})
}

func TestPostExecute(t *testing.T) {
	h := applyWith(t, harnessOptions{host: func(rec *record) *fakeHost {
		fh := recordingHost(rec)
		fh.next = func(context.Context, *pb.NextRequest) (*pb.NextResponse, error) {
			return &pb.NextResponse{Answer: &pb.NextResponse_PostExecute{PostExecute: &pb.Review{
				Verdict: pb.ReviewVerdict_REVIEW_VERDICT_REPLACE, ValueJson: []byte(`"inner value"`)}}}, nil
		}
		return fh
	}}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		if _, err := p.OnPostExecute(ctx, PostExecuteListener{Name: "redact", Filter: func(_ context.Context, _ *Call, out Outcome) (Review, error) {
			switch string(out.Value) {
			case `"secret"`:
				return Replace("[redacted]"), nil
			case `"forbidden"`:
				return Block("not acceptable"), nil
			case `"unencodable"`:
				return Replace(func() {}), nil
			}
			return PassReview(), nil
		}}); err != nil {
			return err
		}
		_, err := p.OnPostExecute(ctx, PostExecuteListener{Name: "observe-inner", Wrap: func(context.Context, *Call, Outcome, NextReview) (Review, error) {
			return PassReview(), nil
		}})
		return err
	})
	regs := h.rec.registrations()
	redact, wrap := regs[0].req.(*pb.ListenRequest), regs[1].req.(*pb.ListenRequest)
	for _, tc := range []struct {
		name, handler, value string
		want                 *pb.Review
	}{
		{name: "replace", handler: redact.GetHandlerId(), value: `"secret"`,
			want: &pb.Review{Verdict: pb.ReviewVerdict_REVIEW_VERDICT_REPLACE, ValueJson: []byte(`"[redacted]"`)}},
		{name: "block", handler: redact.GetHandlerId(), value: `"forbidden"`,
			want: &pb.Review{Verdict: pb.ReviewVerdict_REVIEW_VERDICT_BLOCK, Feedback: "not acceptable"}},
		{name: "a replacement that cannot be encoded blocks", handler: redact.GetHandlerId(), value: `"unencodable"`,
			want: &pb.Review{Verdict: pb.ReviewVerdict_REVIEW_VERDICT_BLOCK, Feedback: "cannot encode replacement value: json: unsupported type: func()"}},
		{name: "pass", handler: redact.GetHandlerId(), value: `"fine"`,
			want: &pb.Review{Verdict: pb.ReviewVerdict_REVIEW_VERDICT_PASS}},
		{name: "wrapper pass returns the inner review", handler: wrap.GetHandlerId(), value: `"fine"`,
			want: &pb.Review{Verdict: pb.ReviewVerdict_REVIEW_VERDICT_REPLACE, ValueJson: []byte(`"inner value"`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.plugin.PostExecute(testCtx(t), &pb.PostExecuteRequest{HandlerId: tc.handler, Execution: execution("t", "{}"),
				Outcome: &pb.Outcome{Ok: true, ValueJson: []byte(tc.value)}, CallToken: "tok"})
			if err != nil || resp.GetError() != "" {
				t.Fatalf("PostExecute: %v %q", err, resp.GetError())
			}
			got := resp.GetReview()
			if got.GetVerdict() != tc.want.GetVerdict() || string(got.GetValueJson()) != string(tc.want.GetValueJson()) || got.GetFeedback() != tc.want.GetFeedback() {
				t.Errorf("review = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestApprove(t *testing.T) {
	var questions []string
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.SetApprover(ctx, Approver{Name: "rules", Approve: func(_ context.Context, c *Call, q string) (Approval, error) {
			questions = append(questions, q)
			switch string(c.Arguments) {
			case `"ok"`:
				return Approve(), nil
			case `"err"`:
				return Approval{}, errors.New("rule engine down")
			}
			return Reject("not on the list"), nil
		}})
		return err
	})
	reg := h.rec.last(t, "SetApprover").req.(*pb.SetApproverRequest)
	for _, tc := range []struct {
		name, args string
		want       *pb.ApproveResponse
	}{
		{name: "approves", args: `"ok"`, want: &pb.ApproveResponse{Approved: true}},
		{name: "rejects", args: `"no"`, want: &pb.ApproveResponse{Reason: "not on the list"}},
		{name: "fails", args: `"err"`, want: &pb.ApproveResponse{Error: "rule engine down"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.plugin.Approve(testCtx(t), &pb.ApproveRequest{HandlerId: reg.GetHandlerId(), Execution: execution("t", tc.args), Question: "really?"})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetApproved() != tc.want.GetApproved() || resp.GetReason() != tc.want.GetReason() || resp.GetError() != tc.want.GetError() {
				t.Errorf("got %v, want %v", resp, tc.want)
			}
		})
	}
	if len(questions) != 3 || questions[0] != "really?" {
		t.Errorf("approver saw %v", questions)
	}
}

func TestCallService(t *testing.T) {
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.Provide(ctx, Service{Name: "index", Methods: map[string]Method{
			"lookup": func(ctx context.Context, args json.RawMessage) (any, error) {
				return map[string]string{"args": string(args), "caller": ServiceCaller(ctx)}, nil
			},
			"fail":  func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("index closed") },
			"panic": func(context.Context, json.RawMessage) (any, error) { panic("index bug") },
		}})
		return err
	})
	reg := h.rec.last(t, "Provide").req.(*pb.ProvideRequest)
	if reg.GetService() != "index" || len(reg.GetMethods()) != 3 {
		t.Errorf("Provide request = %v", reg)
	}
	for _, tc := range []struct{ name, method, result, err string }{
		{name: "result", method: "lookup", result: `{"args":"[1]","caller":"search"}`},
		{name: "error", method: "fail", err: "index closed"},
		{name: "panic", method: "panic", err: "panic in method index.panic: index bug"},
		{name: "unknown method", method: "nope", err: `service "index" has no method "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.plugin.CallService(testCtx(t), &pb.CallServiceRequest{HandlerId: reg.GetHandlerId(), Method: tc.method, ArgsJson: []byte("[1]"), Caller: "search"})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.GetResultJson()) != tc.result || resp.GetError() != tc.err {
				t.Errorf("got %v, want result %s error %q", resp, tc.result, tc.err)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	got := make(chan string, 16)
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.OnResult(ctx, ResultListener{Name: "audit", Observe: func(_ context.Context, c *Call, r ToolResult) {
			if c.Name == "boom" {
				panic("audit bug")
			}
			code := "ok"
			if r.Error != nil {
				code = string(r.Error.Code)
			}
			got <- c.Name + ":" + code + ":" + r.ID
		}})
		return err
	})
	reg := h.rec.last(t, "Listen").req.(*pb.ListenRequest)
	if reg.GetStage() != pb.Stage_STAGE_RESULT {
		t.Errorf("Listen request = %v", reg)
	}
	stream, err := h.plugin.Observe(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	send := func(name string, res *pb.ToolResult) {
		t.Helper()
		if err := stream.Send(&pb.ObserveRequest{HandlerId: reg.GetHandlerId(), Execution: execution(name, "{}"), Result: res}); err != nil {
			t.Fatal(err)
		}
	}
	send("add", &pb.ToolResult{Id: "1", Ok: true})
	send("boom", &pb.ToolResult{Id: "2", Ok: true})
	send("add", &pb.ToolResult{Id: "3", Error: &pb.ToolError{Code: string(wire.CodeDenied), Message: "no"}})
	if err := stream.Send(&pb.ObserveRequest{HandlerId: "disposed-listener", Execution: execution("add", "{}")}); err != nil {
		t.Fatal(err)
	}
	send("nope", &pb.ToolResult{Id: "4", Error: &pb.ToolError{Code: string(wire.CodeUnknownTool)}})
	resp, err := stream.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetReceived() != 5 {
		t.Errorf("received = %d, want 5", resp.GetReceived())
	}
	close(got)
	var seen []string
	for s := range got {
		seen = append(seen, s)
	}
	if want := "add:ok:1,add:DENIED:3,nope:UNKNOWN_TOOL:4"; strings.Join(seen, ",") != want {
		t.Errorf("observed %v, want %s (in order, the panicking one contained)", seen, want)
	}
}

// TestObserveFlush: a listener's Flush runs once per batch it was given
// results in, after the last of them and before the acknowledgement; a
// listener given none is not flushed; a Flush that fails fails the
// stream, so that the batch is not acknowledged.
func TestObserveFlush(t *testing.T) {
	var mu sync.Mutex
	var events []string
	failFlush := false
	record := func(name string) ResultListener {
		return ResultListener{Name: name,
			Observe: func(_ context.Context, c *Call, r ToolResult) {
				mu.Lock()
				events = append(events, name+":"+r.ID)
				mu.Unlock()
			},
			Flush: func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, name+":flush")
				if failFlush {
					return errors.New("disk full")
				}
				return nil
			}}
	}
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		if _, err := p.OnResult(ctx, record("a")); err != nil {
			return err
		}
		_, err := p.OnResult(ctx, record("b"))
		return err
	})
	var ids []string
	for _, reg := range h.rec.registrations() {
		if reg.kind == "Listen" {
			ids = append(ids, reg.req.(*pb.ListenRequest).GetHandlerId())
		}
	}
	if len(ids) != 2 {
		t.Fatalf("%d listeners registered, want 2", len(ids))
	}
	batch := func(handlers ...string) error {
		stream, err := h.plugin.Observe(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range handlers {
			if err := stream.Send(&pb.ObserveRequest{HandlerId: id, Execution: execution("add", "{}"), Result: &pb.ToolResult{Id: fmt.Sprint(i), Ok: true}}); err != nil {
				t.Fatal(err)
			}
		}
		_, err = stream.CloseAndRecv()
		return err
	}
	if err := batch(ids[0], ids[0], ids[0]); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if got := strings.Join(events, ","); got != "a:0,a:1,a:2,a:flush" {
		t.Errorf("events %s, want a's three results then one flush of a", got)
	}
	events, failFlush = nil, true
	mu.Unlock()
	if err := batch(ids[1]); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("a batch whose flush failed: %v, want it not acknowledged", err)
	}
}
