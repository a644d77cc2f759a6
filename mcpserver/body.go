package mcpserver

import (
	"bytes"
	"io"
	"net/http"
)

// bufferBody reads r's body into memory, up to limit+1 bytes, and puts it
// back for the handler after it. The handlers that look at a POST before
// the SDK does (the drain check, the HTTP hot path, the id replacement)
// share that one read: a body already buffered is handed back as it is,
// from its start. It returns what was read and the read's error; more
// than limit bytes means the body is over the limit, which the caller
// leaves to the SDK to refuse.
func bufferBody(r *http.Request, limit int64) ([]byte, error) {
	if b, ok := r.Body.(*bufferedBody); ok && b.limit == limit {
		b.rewind()
		return b.held, b.err
	}
	held, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	b := &bufferedBody{Closer: r.Body, held: held, err: err, rest: r.Body, limit: limit}
	b.rewind()
	r.Body = b
	return held, err
}

// bufferedBody is a request body read into memory up to a limit: the held
// bytes, then whatever was not read.
type bufferedBody struct {
	io.Reader
	io.Closer
	held  []byte
	err   error     // the read's error
	rest  io.Reader // the body past what was held
	limit int64
}

// rewind makes the body read from its start again. Only the handlers
// before the SDK read it, each through bufferBody, and none past the held
// bytes, so the rest is still unread.
func (b *bufferedBody) rewind() { b.Reader = io.MultiReader(bytes.NewReader(b.held), b.rest) }
