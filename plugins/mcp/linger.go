package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// lingerTransport lets an answer's body be read to its end for a moment
// after the request's context is cancelled.
//
// The MCP SDK sends each call as a POST under the call's context and reads
// the answer, an SSE stream, on another goroutine: it hands the call's
// result over as soon as it reads it, then drains the stream to its end so
// that the connection can carry the next request. The caller, now done,
// cancels its context (every call does), and net/http closes a connection
// whose request is cancelled before its body was read to the end: about
// one call in eight lost its connection that way, and paid a new one (a
// TCP handshake and, on a plugkit front end, a new client to vet).
//
// So the request runs under a context of its own. It is cancelled with
// the caller's while no answer has come (a call given up on stops
// waiting), lingerGrace after it once an answer is being read (a stream
// that does not end soon is cut as before), and when the body is closed.
type lingerTransport struct {
	base  http.RoundTripper
	grace time.Duration
}

// lingerGrace is how long an answer's body may still be read after the
// caller gave up on it: the rest of a finished stream arrives in far less.
const lingerGrace = 50 * time.Millisecond

func (t *lingerTransport) CloseIdleConnections() { closeIdle(t.base) }

func (t *lingerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	caller := req.Context()
	ctx, cancel := context.WithCancel(context.WithoutCancel(caller))
	var (
		mu       sync.Mutex
		answered bool
		timer    *time.Timer
	)
	stop := context.AfterFunc(caller, func() {
		mu.Lock()
		defer mu.Unlock()
		if !answered {
			cancel()
			return
		}
		timer = time.AfterFunc(t.grace, cancel)
	})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil || resp.Body == nil {
		stop()
		cancel()
		return resp, err
	}
	mu.Lock()
	answered = true
	mu.Unlock()
	resp.Body = &lingerBody{ReadCloser: resp.Body, done: func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}}
	return resp, nil
}

// lingerBody ends its request's context once closed: by then net/http has
// kept the connection (the body was read to its end) or dropped it.
type lingerBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *lingerBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
