package mcpserver

import (
	"bytes"
	"io"
	"net/http"
)

// A POST's answer stream, when the SDK serves it as server-sent events,
// ends with the call's response: the SDK writes the response event,
// flushes it, and only then returns, when net/http writes the stream's
// end (the last, empty chunk). A Go MCP client (go-sdk) hands the response
// to the caller as soon as it has read the event and drains the rest of
// the body on another goroutine, under the call's context, which the
// caller cancels once it has its result; when the stream's end has not
// arrived by then, net/http closes the connection instead of keeping it,
// and the client's next call opens a new one (on loopback without
// mcp_auth, one more client for the host to vet). endTogether holds back
// the flush of a response event in a POST of one message, so that the
// response and the stream's end leave in one write when the handler
// returns: the client's drain finds the end already read.
//
// Only the last event of such a stream is a response to the POSTed
// request (the others are its notifications and the server's own
// requests), so holding it delays nothing: the handler returns right after
// writing it. A batch (protocols before 2025-06-18) may be answered one
// response at a time, and is flushed as the SDK asks.
func endTogether(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || flushEachEvent {
			next.ServeHTTP(w, r)
			return
		}
		body := &firstByte{ReadCloser: r.Body}
		r.Body = body
		next.ServeHTTP(&holdLast{ResponseWriter: w, body: body}, r)
	})
}

// flushEachEvent turns endTogether off, for the benchmark's baseline.
var flushEachEvent bool

// firstByte remembers the first byte read of a body that is not white
// space: '[' for a batch.
type firstByte struct {
	io.ReadCloser
	first byte
}

func (b *firstByte) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.first == 0 {
		if t := bytes.TrimLeft(p[:n], " \t\r\n"); len(t) > 0 {
			b.first = t[0]
		}
	}
	return n, err
}

// holdLast is the SDK's ResponseWriter for one POST: a flush that follows
// the write of a response event is held back.
type holdLast struct {
	http.ResponseWriter
	body *firstByte
	// response is whether the last write was a whole event carrying a
	// JSON-RPC response.
	response bool
}

func (h *holdLast) Write(p []byte) (int, error) {
	h.response = h.body.first == '{' && isResponseEvent(p)
	return h.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController calls (the SDK flushes
// through one).
func (h *holdLast) FlushError() error {
	if h.response {
		return nil // sent with the stream's end, when the handler returns
	}
	return http.NewResponseController(h.ResponseWriter).Flush()
}

func (h *holdLast) Flush() { _ = h.FlushError() }

// Unwrap lets http.ResponseController reach the connection's own writer
// for deadlines and the like.
func (h *holdLast) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// isResponseEvent reports whether p is one whole server-sent event
// ("…data: …\n\n", the SDK writes each event at once) whose data is a
// JSON-RPC response: an object with a top-level "result" or "error" and
// no "method". Anything else, or anything it cannot read, is not.
func isResponseEvent(p []byte) bool {
	if !bytes.HasSuffix(p, []byte("\n\n")) {
		return false
	}
	var data []byte
	for line := range bytes.Lines(p) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data != nil {
				return false // data over several lines: not the SDK's
			}
			data = bytes.TrimSpace(d)
		}
	}
	keys, ok := topLevelKeys(data)
	if !ok || keys&keyMethod != 0 {
		return false
	}
	return keys&(keyResult|keyError) != 0
}

const (
	keyMethod = 1 << iota
	keyResult
	keyError
)

// topLevelKeys reads a JSON object only far enough to tell which of
// "method", "result" and "error" are its own keys (not keys of a nested
// value): a scan of its bytes, strings and nesting, without decoding.
// ok is false when b does not read as one object, or when a top-level key
// holds an escape (the SDK writes none).
func topLevelKeys(b []byte) (keys int, ok bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return 0, false
	}
	depth := 0
	expectKey := false // at depth 1, the next string is a key
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			depth++
			expectKey = c == '{' && depth == 1
		case '}', ']':
			depth--
			if depth < 0 {
				return 0, false
			}
		case ',':
			expectKey = depth == 1
		case '"':
			end := stringEnd(b, i+1)
			if end < 0 {
				return 0, false
			}
			if depth == 1 && expectKey {
				key := b[i+1 : end]
				if bytes.IndexByte(key, '\\') >= 0 {
					return 0, false // an escaped key could spell any of them
				}
				switch string(key) {
				case "method":
					keys |= keyMethod
				case "result":
					keys |= keyResult
				case "error":
					keys |= keyError
				}
				expectKey = false
			}
			i = end
		}
	}
	return keys, depth == 0
}

// stringEnd returns the index of the quote closing the string that starts
// at from (after its opening quote), or -1.
func stringEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}
