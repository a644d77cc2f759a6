package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"syscall"
)

// Client talks to a running host's admin socket.
type Client struct {
	socket string
	http   *http.Client
	// OnWaiting, when set, is told that a call waits for the approvers
	// of a route.
	OnWaiting func(Waiting)
	// OnElicit, when set, answers a plugin's question during a call made
	// with an ask function, with an MCP ElicitResult; without it such a
	// question is declined.
	OnElicit func(Elicitation) json.RawMessage
}

// NewClient returns a client of the host serving socket. Before it sends
// anything on a connection it checks that the process at the other end runs
// as this user (SO_PEERCRED), and refuses one that does not (PeerError).
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", socket)
			if err != nil {
				return nil, err
			}
			if err := checkPeer(c, socket); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
	}
	return &Client{socket: socket, http: &http.Client{Transport: tr}}
}

// ConnectError says the host could not be reached.
type ConnectError struct {
	Socket string
	Err    error
}

func (e *ConnectError) Error() string {
	if errors.Is(e.Err, fs.ErrNotExist) || errors.Is(e.Err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("no host is running at %s (start one with `host run`)", e.Socket)
	}
	// The innermost error says what failed; the layers above it repeat the
	// request and the socket.
	err := e.Err
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return fmt.Sprintf("cannot reach the host at %s: %v", e.Socket, err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// PeerError says the admin socket is served by another user's process: it
// may have been put in place of the host's, so nothing was sent to it.
type PeerError struct {
	Socket string
	UID    int // the user serving the socket
	PID    int // the process serving it
	Me     int // this user
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("admin socket %s is served by process %d of uid %d, not by you (uid %d): nothing was sent to it; "+
		"another user may have replaced the socket; stop that process, remove the socket, and keep its folder writable only by you",
		e.Socket, e.PID, e.UID, e.Me)
}

func (c *Client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://host"+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if pe := (*PeerError)(nil); errors.As(err, &pe) {
			return nil, pe
		}
		if ie := (*ImpostorError)(nil); errors.As(err, &ie) {
			return nil, ie
		}
		return nil, &ConnectError{Socket: c.socket, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var m Message
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if m.Error == "" {
			m.Error = resp.Status
		}
		return nil, errors.New(m.Error)
	}
	return resp, nil
}

func (c *Client) get(ctx context.Context, path string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// Status returns every plugin's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.get(ctx, "/v1/status", &s)
	return s, err
}

// Tools returns every registered tool.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	var t []Tool
	err := c.get(ctx, "/v1/tools", &t)
	return t, err
}

// Call runs one call. When ask is not nil the host may put questions to it
// while the call waits; without it, a call that needs an approval is denied.
func (c *Client) Call(ctx context.Context, tool string, args json.RawMessage, ask func(Question) bool) (Result, error) {
	resp, err := c.do(ctx, http.MethodPost, "/v1/call", CallRequest{Tool: tool, Arguments: args, Interactive: ask != nil})
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		var ev CallEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return Result{}, fmt.Errorf("call: bad answer from the host: %w", err)
		}
		switch {
		case ev.Result != nil:
			return *ev.Result, nil
		case ev.Waiting != nil:
			if c.OnWaiting != nil {
				c.OnWaiting(*ev.Waiting)
			}
		case ev.Elicitation != nil:
			// Only a client that can ask its user answers; any other
			// declines, as the host does for a caller it cannot ask.
			answer := json.RawMessage(`{"action":"decline"}`)
			if ask != nil && c.OnElicit != nil {
				answer = c.OnElicit(*ev.Elicitation)
			}
			if _, err := c.post(ctx, "/v1/answer", Answer{ID: ev.Elicitation.ID, Key: ev.AnswerKey, Elicited: answer}); err != nil {
				return Result{}, err
			}
		case ev.Question != nil:
			approved := ask != nil && ask(*ev.Question)
			if _, err := c.post(ctx, "/v1/answer", Answer{ID: ev.Question.ID, Key: ev.AnswerKey, Approved: approved}); err != nil {
				return Result{}, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, &ConnectError{Socket: c.socket, Err: err}
	}
	return Result{}, &ConnectError{Socket: c.socket, Err: errors.New("the host closed the call without a result")}
}

// Explain asks what a call would do, without making it.
func (c *Client) Explain(ctx context.Context, req ExplainRequest) (Explanation, error) {
	var x Explanation
	resp, err := c.do(ctx, http.MethodPost, "/v1/explain", req)
	if err != nil {
		return x, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&x); err != nil {
		return x, fmt.Errorf("explain: bad answer from the host: %w", err)
	}
	return x, nil
}

func (c *Client) post(ctx context.Context, path string, body any) (string, error) {
	resp, err := c.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var m Message
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return "", err
	}
	return m.Message, nil
}

// Reload restarts one plugin, or reloads the deployment file when plugin is
// "". A reload that left host settings for the next start returns its
// summary and a *NeedsRestart naming them.
func (c *Client) Reload(ctx context.Context, plugin string) (string, error) {
	resp, err := c.do(ctx, http.MethodPost, "/v1/reload", ReloadRequest{Plugin: plugin})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var m Message
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return "", fmt.Errorf("reload: reading the answer: %w", err)
	}
	if len(m.Restart) > 0 {
		return m.Message, &NeedsRestart{Summary: m.Message, Settings: m.Restart}
	}
	return m.Message, nil
}

// Stop asks the host to stop.
func (c *Client) Stop(ctx context.Context) (string, error) {
	return c.post(ctx, "/v1/stop", struct{}{})
}
