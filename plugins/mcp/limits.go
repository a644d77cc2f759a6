package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bridge is bounded: a server cannot make it wait, allocate or work
// without limit.
//
//   - initialize, tools/list and every other control request end after
//     start_timeout (a server that never answers cannot hold the host's
//     apply step, and with it every reload, for longer);
//   - a server's message is at most max_answer_bytes (the stdio transport's
//     frame limit, or the HTTP body read);
//   - a list longer than max_tools is refused as a whole (registering it
//     costs the host memory and time in proportion);
//   - a tool whose input or output schema is larger than max_schema_bytes
//     is held absent;
//   - so is a tool whose description or title is larger than
//     max_description_bytes, before its text is scanned (the description
//     checks cost about 1.5 µs a byte: 12 s for an 8 MB description, at
//     every tools/list);
//   - list_changed notifications are coalesced: at most one tools/list per
//     list_changed_interval, however many arrive.

const (
	defaultStartTimeout        = 30 * time.Second
	defaultMaxTools            = 1000
	defaultMaxSchemaBytes      = 256 << 10
	defaultMaxDescBytes        = 16 << 10 // the host's max_description_bytes default
	defaultMaxAnswerBytes      = 16 << 20
	defaultListChangedInterval = time.Second
)

type limits struct {
	startTimeout time.Duration
	maxTools     int
	maxSchema    int
	maxAnswer    int
	listInterval time.Duration
	maxDesc      int
}

func (l *limits) check(cfg Config) []string {
	var errs []string
	*l = limits{defaultStartTimeout, defaultMaxTools, defaultMaxSchemaBytes, defaultMaxAnswerBytes, defaultListChangedInterval, defaultMaxDescBytes}
	dur := func(name, v string, into *time.Duration) {
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s %q is not a positive duration such as \"30s\"", name, v))
			return
		}
		*into = d
	}
	dur("start_timeout", cfg.StartTimeout, &l.startTimeout)
	dur("list_changed_interval", cfg.ListChangedInterval, &l.listInterval)
	num := func(name string, v, min int, into *int) {
		switch {
		case v == 0:
		case v < min:
			errs = append(errs, fmt.Sprintf("%s %d is below %d", name, v, min))
		default:
			*into = v
		}
	}
	num("max_tools", cfg.MaxTools, 1, &l.maxTools)
	num("max_schema_bytes", cfg.MaxSchemaBytes, 1, &l.maxSchema)
	num("max_answer_bytes", cfg.MaxAnswerBytes, 1024, &l.maxAnswer)
	num("max_description_bytes", cfg.MaxDescriptionBytes, 1, &l.maxDesc)
	return errs
}

// control bounds one control request (initialize, tools/list).
func (l *limits) control(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.startTimeout)
}

// timedOut names the limit when a control request ran out of time.
func (l *limits) timedOut(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer within start_timeout (%s): %w", what, l.startTimeout, err)
	}
	return err
}

// errTooManyTools refuses a list longer than max_tools.
func (l *limits) tooManyTools() error {
	return fmt.Errorf("the server lists more than max_tools (%d) tools; bridge fewer (tools.enabled) or raise max_tools", l.maxTools)
}

// schemaTooLarge is why a tool with a schema of n bytes is held, "" if not.
func (l *limits) schemaTooLarge(which string, n int) string {
	if n > l.maxSchema {
		return fmt.Sprintf("%s is %d bytes, more than max_schema_bytes (%d)", which, n, l.maxSchema)
	}
	return ""
}

// boundText holds a tool whose description or title is larger than
// max_description_bytes: it returns why ("" if not) and a copy of t with
// both cut to the bound, which is what is scanned and sent to the host.
func (l *limits) boundText(t *mcp.Tool) (string, *mcp.Tool) {
	var why []string
	c := *t
	for _, f := range []struct {
		name string
		text *string
	}{{"description", &c.Description}, {"title", &c.Title}} {
		if n := len(*f.text); n > l.maxDesc {
			why = append(why, fmt.Sprintf("the %s is %d bytes, more than max_description_bytes (%d)", f.name, n, l.maxDesc))
			cut := l.maxDesc
			for cut > 0 && !utf8.RuneStart((*f.text)[cut]) {
				cut--
			}
			*f.text = (*f.text)[:cut]
		}
	}
	if why == nil {
		return "", t
	}
	return strings.Join(why, "; "), &c
}

// commandTransport is mcp.CommandTransport with a bound on the size of one
// message from the server (the SDK's own is a fixed 16 MiB): the same
// pipes, and the same close (stdin closed, then SIGTERM, then SIGKILL).
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	maxAnswer int
	// hot sends the bridge's tools/call on the connection (hotclient.go);
	// set by Connect.
	hot *hotClient
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	w := &serverStdin{WriteCloser: stdin, cmd: t.cmd, terminate: t.terminate}
	var it *mcp.IOTransport
	t.hot, it = hotTransport(stdout, w, t.maxAnswer)
	return it.Connect(ctx)
}

// serverStdin closes the session the way MCP's stdio transport says: close
// the server's input, wait, SIGTERM, wait, SIGKILL.
type serverStdin struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
}

func (s *serverStdin) Close() error {
	_ = s.WriteCloser.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	wait := func() bool {
		select {
		case <-done:
			return true
		case <-time.After(s.terminate):
			return false
		}
	}
	if wait() {
		return nil
	}
	if s.cmd.Process.Signal(syscall.SIGTERM) == nil && wait() {
		return nil
	}
	_ = s.cmd.Process.Kill()
	<-done
	return nil
}

// limitedBody bounds each HTTP answer body of a streamable HTTP server.
type limitedBody struct {
	base http.RoundTripper
	max  int64
}

// CloseIdleConnections closes the idle connections of the transport below.
func (t *limitedBody) CloseIdleConnections() { closeIdle(t.base) }

func (t *limitedBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &capReader{rc: resp.Body, left: t.max, max: t.max}
	return resp, nil
}

type capReader struct {
	rc        io.ReadCloser
	left, max int64
}

func (r *capReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, fmt.Errorf("the server's answer is larger than max_answer_bytes (%d)", r.max)
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.rc.Read(p)
	r.left -= int64(n)
	return n, err
}

func (r *capReader) Close() error { return r.rc.Close() }
