package mcpserver

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
)

// exactIDs makes JSON-RPC ids round-trip exactly over streamable HTTP. The
// SDK reads a numeric id as a float64 and answers with it as an int64, so
// 1e30 came back as -9223372036854775808 and 1.5 as 1: a client could not
// match the answer to its request (or matched it to another). An id the
// SDK would not give back as written is replaced, on the way in, by a
// string unique to this request, and that string, on the way out, by the
// id exactly as the client wrote it. Ids the SDK keeps (strings, integers
// written plainly within ±2^53) are left alone.
//
// The answer of a POST is written by the SDK one JSON-RPC message per
// Write (an SSE event or a JSON body), so the replacement is made within
// each Write.
//
// A notifications/cancelled naming a replaced id is given the placeholder
// of that request, in flight in the same session (cancelids.go).
func exactIDs(maxBody int64, next http.Handler) http.Handler {
	var inFlight inFlightIDs
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		// httplimit.Limits.Body has read the body into memory already;
		// the limit only matters for a handler served without it. The
		// drain check and the hot path may have buffered it: one read.
		body, err := bufferBody(r, maxBody)
		if err != nil {
			http.Error(w, "cannot read the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		session := r.Header.Get("Mcp-Session-Id")
		body = cancelIDs(body, inFlight.lookup(session))
		out, swaps, err := replaceIDs(body)
		if err != nil {
			// Left to the SDK, which answers a body it cannot parse with
			// a JSON-RPC parse error.
			out, swaps = body, nil
		}
		r.Body = io.NopCloser(bytes.NewReader(out))
		r.ContentLength = int64(len(out))
		if len(swaps) > 0 {
			w = &idWriter{ResponseWriter: w, swaps: swaps}
			inFlight.add(session, swaps)
			defer inFlight.remove(session, swaps)
		}
		next.ServeHTTP(w, r)
	})
}

// idSwap is one replaced id: what the SDK sees and what the client wrote.
type idSwap struct{ placeholder, literal []byte }

// replaceIDs replaces the id of each message in body (an object, or an
// array of them) that the SDK would not give back as written.
func replaceIDs(body []byte) ([]byte, []idSwap, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return nil, nil, err
	}
	type span struct{ start, end int64 }
	var spans []span
	var lits []string
	message := func() error {
		// Just after a message's '{': its members, to the '}'.
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return err
			}
			if k != "id" {
				var skip json.RawMessage
				if err := d.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			v, err := d.Token()
			if err != nil {
				return err
			}
			switch v := v.(type) {
			case json.Number:
				if !keptBySDK(string(v)) {
					end := d.InputOffset()
					spans = append(spans, span{end - int64(len(v)), end})
					lits = append(lits, string(v))
				}
			case json.Delim:
				return errors.New("an id that is an object or an array")
			}
		}
		_, err := d.Token() // '}'
		return err
	}
	switch tok {
	case json.Delim('{'):
		if err := message(); err != nil {
			return nil, nil, err
		}
	case json.Delim('['):
		for d.More() {
			if t, err := d.Token(); err != nil || t != json.Delim('{') {
				return nil, nil, fmt.Errorf("a batch element that is not an object")
			}
			if err := message(); err != nil {
				return nil, nil, err
			}
		}
	default:
		return nil, nil, errors.New("not a JSON-RPC message")
	}
	if len(spans) == 0 {
		return body, nil, nil
	}
	nonce := rand.Text()
	out := make([]byte, 0, len(body)+len(spans)*40)
	swaps := make([]idSwap, len(spans))
	var at int64
	for i, s := range spans {
		ph := []byte(strconv.Quote(fmt.Sprintf("plugkit-id-%s-%d", nonce, i)))
		swaps[i] = idSwap{placeholder: ph, literal: []byte(lits[i])}
		out = append(out, body[at:s.start]...)
		out = append(out, ph...)
		at = s.end
	}
	out = append(out, body[at:]...)
	return out, swaps, nil
}

// keptBySDK says whether the SDK answers with the numeric id lit as it was
// written: an integer written plainly ("-0" is not: it comes back as 0),
// small enough that a float64 holds it exactly.
func keptBySDK(lit string) bool {
	digits := lit
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" || (len(digits) > 1 && digits[0] == '0') || lit == "-0" {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	return err == nil && n >= -(1<<53) && n <= 1<<53 && math.Abs(float64(n)) <= 1<<53
}

// idWriter puts the client's ids back into what the SDK writes.
type idWriter struct {
	http.ResponseWriter
	swaps []idSwap
}

func (w *idWriter) Write(p []byte) (int, error) {
	q := p
	for _, s := range w.swaps {
		if bytes.Contains(q, s.placeholder) {
			q = bytes.ReplaceAll(q, s.placeholder, s.literal)
		}
	}
	if _, err := w.ResponseWriter.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap lets http.ResponseController reach Flush and the deadlines.
func (w *idWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// stdioIDs does for newline-delimited JSON-RPC (stdio) what exactIDs does
// for HTTP: each line read has its ids replaced, and the placeholder of a
// written answer is put back, once (the answer is the one message that
// carries its request's id).
type stdioIDs struct {
	r   *bufio.Reader
	buf []byte // what is left of the line being read
	// hot, when set, is offered each line first (hotcall.go); a line it
	// takes is not passed on.
	hot *hotCalls

	mu    sync.Mutex
	swaps []idSwap
}

func (s *stdioIDs) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		line, err := s.r.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		if c := cancelIDs(line, s.lookup); !bytes.Equal(c, line) {
			line = append(c, '\n')
		}
		if out, swaps, rerr := replaceIDs(line); rerr == nil && len(swaps) > 0 {
			s.mu.Lock()
			s.swaps = append(s.swaps, swaps...)
			s.mu.Unlock()
			line = out
		}
		if s.hot != nil && s.hot.take(line) {
			if err != nil {
				return 0, err
			}
			continue
		}
		s.buf = line
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// lookup is the placeholder of a request in flight whose id was literal.
func (s *stdioIDs) lookup(literal []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sw := range s.swaps {
		if bytes.Equal(sw.literal, literal) {
			return sw.placeholder
		}
	}
	return nil
}

// writer returns w with the placeholders of s put back.
func (s *stdioIDs) writer(w io.Writer) io.Writer { return stdioIDWriter{s, w} }

type stdioIDWriter struct {
	s *stdioIDs
	w io.Writer
}

func (x stdioIDWriter) Write(p []byte) (int, error) {
	q := p
	x.s.mu.Lock()
	x.s.swaps = slices.DeleteFunc(x.s.swaps, func(sw idSwap) bool {
		if !bytes.Contains(q, sw.placeholder) {
			return false
		}
		q = bytes.ReplaceAll(q, sw.placeholder, sw.literal)
		return true
	})
	x.s.mu.Unlock()
	if _, err := x.w.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}
