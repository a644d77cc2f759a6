package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bridge's tools/call to a server over stdio is sent and its answer
// read here, not by the MCP SDK's client, which decodes every message it
// reads more than once, each time with a new decoder that allocates a
// 32 KB buffer. The request is encoded with the SDK's own encoder and an
// id of the bridge's ("plugkit-hot-N", which the SDK's integer ids never
// are); the server's output is read a line at a time beneath the SDK's
// transport, and the answer to such an id is decoded once, into the
// result's fields, and never reaches the SDK. Every other line (answers to
// the SDK's requests, the server's requests and notifications) goes to the
// SDK as it came. A result with anything but text blocks, content and
// structuredContent is decoded by the SDK's own types, so that what the
// bridge returns is what it returned before (FuzzHotResultDecode).
//
// A session of 2026-07-28 or later is served so once the SDK has shown the
// protocol _meta its requests carry (hotmeta.go); a cancelled call is
// cancelled at the server with notifications/cancelled, as the SDK does.

// hotPrefix starts the ids of the bridge's own requests.
const hotPrefix = "plugkit-hot-"

// errHotClosed is a call's error when the server's output ended under it.
var errHotClosed = errors.New("the connection to the MCP server closed")

// hotClient reads a server's output for the SDK, keeping the answers to the
// bridge's own calls.
type hotClient struct {
	r   *bufio.Reader
	max int // the longest message read, as the SDK's MaxLineLength
	out io.WriteCloser

	buf  []byte // what is left of the line being passed on
	long bool   // passing on the rest of a line longer than max

	next    atomic.Uint64
	mu      sync.Mutex
	waiting map[string]chan hotAnswer
	ended   error

	// meta is the SDK's per-request protocol _meta (2026-07-28 and
	// later), once seen; nil before, and for an older session.
	meta atomic.Pointer[requestMeta]
}

// hotAnswer is the server's answer to one call: its result, or its error.
type hotAnswer struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

func newHotClient(stdout io.Reader, stdin io.WriteCloser, max int) *hotClient {
	h := &hotClient{r: bufio.NewReader(stdout), max: max, waiting: map[string]chan hotAnswer{}}
	h.out = &lockedWriteCloser{w: stdin, meta: &h.meta}
	return h
}

// hotTransport is the SDK's transport over a server's stdout and stdin with
// the bridge's own client beneath it.
func hotTransport(stdout io.Reader, stdin io.WriteCloser, max int) (*hotClient, *mcp.IOTransport) {
	h := newHotClient(stdout, stdin, max)
	return h, &mcp.IOTransport{Reader: io.NopCloser(h), Writer: h.out, MaxLineLength: max}
}

// Read is the server's output as the SDK reads it, less the answers kept.
func (h *hotClient) Read(p []byte) (int, error) {
	for len(h.buf) == 0 {
		if h.long {
			chunk, err := h.r.ReadSlice('\n')
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				h.long = false
			}
			if len(chunk) == 0 {
				h.end(err)
				return 0, err
			}
			h.buf = append(h.buf[:0], chunk...)
			break
		}
		line, err := h.readLine()
		if len(line) == 0 {
			h.end(err)
			return 0, err
		}
		if !h.long && h.keep(line) {
			continue
		}
		h.buf = line
	}
	n := copy(p, h.buf)
	h.buf = h.buf[n:]
	return n, nil
}

// readLine reads one line, or its first max+1 bytes when it is longer (the
// rest is passed on as it is read, for the SDK to refuse).
func (h *hotClient) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := h.r.ReadSlice('\n')
		line = append(line, chunk...)
		if h.max > 0 && len(line) > h.max && (len(line) == 0 || line[len(line)-1] != '\n') {
			h.long = true
			return line, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// keep takes line when it answers one of the bridge's calls.
func (h *hotClient) keep(line []byte) bool {
	if !bytes.Contains(line, []byte(hotPrefix)) {
		return false
	}
	id, a, ok := decodeHotAnswer(line)
	if !ok {
		return false
	}
	h.mu.Lock()
	ch := h.waiting[id]
	delete(h.waiting, id)
	h.mu.Unlock()
	if ch == nil {
		return false // no call waits for it (cancelled): the SDK drops it
	}
	ch <- a
	return true
}

// end fails the calls waiting when the server's output ended.
func (h *hotClient) end(err error) {
	if err == nil {
		err = io.EOF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended == nil {
		h.ended = fmt.Errorf("%w: %v", errHotClosed, err)
	}
	for id, ch := range h.waiting {
		close(ch)
		delete(h.waiting, id)
	}
}

// decodeHotAnswer reads an answer to one of the bridge's calls: its id and
// its result or error. Member names match exactly, as the SDK's decoder
// matches them.
func decodeHotAnswer(line []byte) (string, hotAnswer, bool) {
	var env map[string]json.RawMessage
	if json.Unmarshal(line, &env) != nil {
		return "", hotAnswer{}, false
	}
	var id, version string
	if !exactString(env["id"], &id) || len(id) <= len(hotPrefix) || id[:len(hotPrefix)] != hotPrefix ||
		!exactString(env["jsonrpc"], &version) || version != "2.0" {
		return "", hotAnswer{}, false
	}
	if _, isRequest := env["method"]; isRequest {
		return "", hotAnswer{}, false
	}
	if raw, ok := env["error"]; ok && string(raw) != "null" {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			return "", hotAnswer{}, false
		}
		e := &jsonrpc.Error{}
		if c, ok := fields["code"]; ok && json.Unmarshal(c, &e.Code) != nil {
			return "", hotAnswer{}, false
		}
		if m, ok := fields["message"]; ok && !exactString(m, &e.Message) {
			return "", hotAnswer{}, false
		}
		if d, ok := fields["data"]; ok && string(d) != "null" {
			e.Data = d
		}
		return id, hotAnswer{err: e}, true
	}
	result, ok := env["result"]
	if !ok {
		return "", hotAnswer{}, false
	}
	return id, hotAnswer{result: result}, true
}

// exactString decodes raw, a JSON string, into s.
func exactString(raw json.RawMessage, s *string) bool {
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, s) == nil
}

// call sends tools/call and waits for its answer or ctx. modern says the
// session is of 2026-07-28 or later: the request carries the protocol
// _meta the SDK's requests do (h.serves says whether it is known).
func (h *hotClient) call(ctx context.Context, params *mcp.CallToolParams, modern bool) (*mcp.CallToolResult, error) {
	if modern {
		m := h.meta.Load()
		if m == nil {
			return nil, errors.New("the protocol _meta of the session is not known yet")
		}
		params = withRequestMeta(params, *m)
	}
	id := hotPrefix + strconv.FormatUint(h.next.Add(1), 10)
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		return nil, err
	}
	// As the SDK encodes params: HTML characters left as they are.
	var pbuf bytes.Buffer
	enc := json.NewEncoder(&pbuf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(params); err != nil {
		return nil, fmt.Errorf("encode tools/call: %w", err)
	}
	raw := bytes.TrimSuffix(pbuf.Bytes(), []byte("\n"))
	msg, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: rid, Method: "tools/call", Params: raw})
	if err != nil {
		return nil, fmt.Errorf("encode tools/call: %w", err)
	}
	ch := make(chan hotAnswer, 1)
	h.mu.Lock()
	if h.ended != nil {
		err := h.ended
		h.mu.Unlock()
		return nil, err
	}
	h.waiting[id] = ch
	h.mu.Unlock()
	if _, err := h.out.Write(append(msg, '\n')); err != nil {
		h.forget(id)
		return nil, fmt.Errorf("%w: %v", errHotClosed, err)
	}
	select {
	case a, ok := <-ch:
		if !ok {
			h.mu.Lock()
			err := h.ended
			h.mu.Unlock()
			return nil, err
		}
		if a.err != nil {
			return nil, a.err
		}
		return decodeCallResult(a.result)
	case <-ctx.Done():
		h.forget(id)
		// As the SDK's client does: the server is told to stop.
		note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id, "reason": ctx.Err().Error()}})
		_, _ = h.out.Write(append(note, '\n'))
		return nil, ctx.Err()
	}
}

func (h *hotClient) forget(id string) {
	h.mu.Lock()
	delete(h.waiting, id)
	h.mu.Unlock()
}

// decodeCallResult decodes a tools/call result: a result of text blocks,
// structuredContent, isError and _meta directly; any other by the SDK.
func decodeCallResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if res, ok := decodeTextResult(raw); ok {
		return res, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode the tools/call result: %w", err)
	}
	return &res, nil
}

// decodeTextResult is the direct decoding of a plain result; ok is false
// for any other.
func decodeTextResult(raw json.RawMessage) (*mcp.CallToolResult, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, false
	}
	res := &mcp.CallToolResult{}
	for k, v := range fields {
		switch k {
		case "content":
			var blocks []map[string]json.RawMessage
			if json.Unmarshal(v, &blocks) != nil {
				return nil, false
			}
			if blocks != nil {
				res.Content = make([]mcp.Content, 0, len(blocks))
			}
			for _, b := range blocks {
				var typ, text string
				if len(b) != 2 || !exactString(b["type"], &typ) || typ != "text" || !exactString(b["text"], &text) {
					return nil, false
				}
				res.Content = append(res.Content, &mcp.TextContent{Text: text})
			}
		case "structuredContent":
			if string(v) != "null" && json.Unmarshal(v, &res.StructuredContent) != nil {
				return nil, false
			}
		case "isError":
			if json.Unmarshal(v, &res.IsError) != nil {
				return nil, false
			}
		case "_meta":
			if string(v) != "null" && (v[0] != '{' || json.Unmarshal(v, &res.Meta) != nil) {
				return nil, false
			}
		case "resultType":
			// A session of 2026-07-28 or later says the result is
			// complete; input required is the SDK's to go on with.
			var t string
			if !exactString(v, &t) || t != "complete" {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return res, true
}

// lockedWriteCloser serializes the writes of the SDK and of the bridge's
// calls to the server's input: each Write is one whole message.
type lockedWriteCloser struct {
	mu sync.Mutex
	w  io.WriteCloser
	// meta gets the protocol _meta of the first request written that has
	// one (noteRequestMeta).
	meta *atomic.Pointer[requestMeta]
}

func (l *lockedWriteCloser) Write(p []byte) (int, error) {
	if l.meta != nil {
		noteRequestMeta(l.meta, p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriteCloser) Close() error { return l.w.Close() }

// serves says whether the bridge's own client can send cs's tools/call, and
// whether the session is of 2026-07-28 or later: an older session always,
// a newer one once the SDK's protocol _meta is known.
func (h *hotClient) serves(cs *mcp.ClientSession) (ok, modern bool) {
	r := cs.InitializeResult()
	if r == nil {
		return false, false
	}
	if r.ProtocolVersion < "2026-07-28" {
		return true, false
	}
	return h.meta.Load() != nil, true
}
