package main

import (
	"strings"
	"testing"
	"time"
)

// The stream interleaves two packages as go test -json does: each line is
// printed when its package ends, a failed package with its failed test's
// output and its own, and none of a passing test's.
func TestLines(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"slow"}`,
		`{"Action":"start","Package":"fast"}`,
		`{"Action":"run","Package":"slow","Test":"TestA"}`,
		`{"Action":"output","Package":"slow","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"slow","Test":"TestA","Output":"    a_test.go:9: quiet\n"}`,
		`{"Action":"output","Package":"fast","Output":"ok  \tfast\t0.010s\n"}`,
		`{"Action":"pass","Package":"fast","Elapsed":0.01}`,
		`{"Action":"pass","Package":"slow","Test":"TestA"}`,
		`{"Action":"output","Package":"slow","Test":"TestB","Output":"=== RUN   TestB\n"}`,
		`{"Action":"output","Package":"slow","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}`,
		`{"Action":"output","Package":"slow","Test":"TestB","Output":"    b_test.go:3: broke\n"}`,
		`{"Action":"fail","Package":"slow","Test":"TestB"}`,
		`not json: go: a message of go's own`,
		`{"Action":"output","Package":"slow","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"slow","Output":"FAIL\tslow\t2.000s\n"}`,
		`{"Action":"fail","Package":"slow","Elapsed":2}`,
		`{"Action":"start","Package":"none"}`,
		`{"Action":"output","Package":"none","Output":"?   \tnone\t[no test files]\n"}`,
		`{"Action":"skip","Package":"none"}`,
	}, "\n") + "\n"
	var out strings.Builder
	l := newLines(&out)
	if err := l.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	want := "ok  \tfast\t0.010s\n" +
		"not json: go: a message of go's own\n" +
		"--- FAIL: TestB (0.00s)\n    b_test.go:3: broke\nFAIL\nFAIL\tslow\t2.000s\n" +
		"?   \tnone\t[no test files]\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if !l.hasFailed() {
		t.Error("a failed package is not reported as a failure")
	}
}

// A package that ends by a timeout's panic has no fail event for its
// running test: what the test printed comes out with the panic.
func TestLinesUnendedTest(t *testing.T) {
	in := `{"Action":"output","Package":"p","Test":"TestHang","Output":"    h_test.go:5: waiting\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 30m0s\n"}
{"Action":"fail","Package":"p","Elapsed":1800}
`
	var out strings.Builder
	l := newLines(&out)
	if err := l.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	want := "    h_test.go:5: waiting\npanic: test timed out after 30m0s\nFAIL\tp\t1800.000s\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A quiet stretch names the packages still running; a line printed since
// keeps it quiet.
func TestStill(t *testing.T) {
	var out strings.Builder
	l := newLines(&out)
	l.event(event{Action: "start", Package: "p"})
	l.still(l.last.Add(time.Minute), 2*time.Minute)
	if out.Len() != 0 {
		t.Fatalf("printed before the quiet time: %q", out.String())
	}
	l.still(l.last.Add(3*time.Minute), 2*time.Minute)
	if !strings.HasPrefix(out.String(), "... still running: p (") {
		t.Fatalf("got %q", out.String())
	}
	l.event(event{Action: "pass", Package: "p"})
	out.Reset()
	l.still(l.last.Add(time.Hour), 2*time.Minute)
	if out.Len() != 0 {
		t.Fatalf("printed with nothing running: %q", out.String())
	}
}
