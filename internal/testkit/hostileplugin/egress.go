package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// viaProxy asks the proxy HTTPS_PROXY names for a tunnel to addr (as an
// HTTP client honouring the variable would), sends "ping" through it and
// reads a line back: Done with that line once the far end answered.
func viaProxy(addr string) Outcome {
	env := os.Getenv("HTTPS_PROXY")
	if env == "" {
		return Outcome{Detail: "no HTTPS_PROXY in the environment"}
	}
	u, err := url.Parse(env)
	if err != nil {
		return outcome(err, "")
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		return outcome(err, "")
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		return outcome(err, "")
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return outcome(err, "")
	}
	if resp.StatusCode != http.StatusOK {
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		return Outcome{Detail: fmt.Sprintf("proxy: %s: %s", resp.Status, strings.TrimSpace(string(b[:n])))}
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return outcome(err, "")
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return outcome(fmt.Errorf("through the tunnel: %w", err), "")
	}
	return Outcome{Done: true, Detail: strings.TrimSpace(line)}
}

// udpQuery sends a DNS question for example.com to addr over UDP and waits
// for any answer: Done when one came.
func udpQuery(addr string) Outcome {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return outcome(err, "")
	}
	defer c.Close()
	// ID 0x1234, recursion desired, one question: example.com A IN.
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
		7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1}
	if _, err := c.Write(q); err != nil {
		return outcome(err, "")
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b := make([]byte, 512)
	n, err := c.Read(b)
	if err != nil {
		return outcome(err, "")
	}
	if n < 2 || b[0] != 0x12 || b[1] != 0x34 {
		return outcome(errors.New("not an answer to the question"), "")
	}
	return Outcome{Done: true, Detail: fmt.Sprintf("%d bytes of answer", n)}
}
