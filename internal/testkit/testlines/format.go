package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is a line of `go test -json` (cmd/test2json), and of the build
// output it carries since Go 1.24.
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
	Elapsed    float64
}

// lines turns go test's JSON into go test's own lines, a package's line
// as soon as the package ends rather than in the order of the package
// list (which held back every finished package behind the slowest one).
// A failed package prints what go test would: its failed tests' output,
// then its own; a passing one only its line.
type lines struct {
	mu      sync.Mutex
	out     io.Writer
	pkgs    map[string]*pkgOutput
	running map[string]time.Time // packages started, not ended
	failed  bool
	last    time.Time // when a line was last printed
}

// pkgOutput is what a package printed so far.
type pkgOutput struct {
	own    strings.Builder             // not a test's: its ok/FAIL line, a panic
	tests  map[string]*strings.Builder // by test, until it ends
	failed strings.Builder             // the output of its failed tests
}

func newLines(out io.Writer) *lines {
	return &lines{out: out, pkgs: map[string]*pkgOutput{}, running: map[string]time.Time{}, last: time.Now()}
}

// read consumes r to its end. A line that is not JSON (go's own errors)
// is printed as it is.
func (l *lines) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			l.print(sc.Text() + "\n")
			continue
		}
		l.event(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading go test's output: %w", err)
	}
	return nil
}

func (l *lines) event(e event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Action {
	case "build-output":
		l.printLocked(e.Output)
		return
	case "build-fail":
		l.failed = true
		return
	}
	pkg := e.Package
	p := l.pkgs[pkg]
	if p == nil {
		p = &pkgOutput{tests: map[string]*strings.Builder{}}
		l.pkgs[pkg] = p
	}
	if e.Test != "" {
		b := p.tests[e.Test]
		if b == nil {
			b = &strings.Builder{}
			p.tests[e.Test] = b
		}
		switch e.Action {
		case "output":
			// -json runs tests verbosely; go test's plain lines have no
			// === RUN/PAUSE/CONT/NAME.
			if !strings.HasPrefix(e.Output, "=== ") {
				b.WriteString(e.Output)
			}
		case "fail":
			p.failed.WriteString(b.String())
			delete(p.tests, e.Test)
		case "pass", "skip":
			delete(p.tests, e.Test)
		}
		return
	}
	switch e.Action {
	case "start":
		l.running[pkg] = time.Now()
	case "output":
		p.own.WriteString(e.Output)
	case "pass":
		l.end(pkg)
		l.printLocked(lastLine(p.own.String(), "ok  ", fmt.Sprintf("ok  \t%s\t%.3fs\n", pkg, e.Elapsed)))
	case "skip":
		l.end(pkg)
		l.printLocked(lastLine(p.own.String(), "?   ", fmt.Sprintf("?   \t%s\t[no test files]\n", pkg)))
	case "fail":
		l.failed = true
		l.end(pkg)
		var b strings.Builder
		b.WriteString(p.failed.String())
		// Tests that never ended (a timeout's panic, a crash) show
		// what they printed.
		names := make([]string, 0, len(p.tests))
		for name := range p.tests {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			b.WriteString(p.tests[name].String())
		}
		b.WriteString(p.own.String())
		if !strings.Contains(p.own.String(), "FAIL\t"+pkg) {
			fmt.Fprintf(&b, "FAIL\t%s\t%.3fs\n", pkg, e.Elapsed)
		}
		l.printLocked(b.String())
	}
}

// lastLine is the last line of out that starts with prefix, else def.
func lastLine(out, prefix, def string) string {
	ls := strings.SplitAfter(out, "\n")
	for i := len(ls) - 1; i >= 0; i-- {
		if strings.HasPrefix(ls[i], prefix) {
			if !strings.HasSuffix(ls[i], "\n") {
				return ls[i] + "\n"
			}
			return ls[i]
		}
	}
	return def
}

func (l *lines) end(pkg string) {
	delete(l.pkgs, pkg)
	delete(l.running, pkg)
}

func (l *lines) print(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.printLocked(s)
}

func (l *lines) printLocked(s string) {
	io.WriteString(l.out, s)
	l.last = time.Now()
}

// still prints which packages are still running when nothing was printed
// for quiet: a long package (the host's system tests) is not a hang.
func (l *lines) still(now time.Time, quiet time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.last) < quiet || len(l.running) == 0 {
		return
	}
	var names []string
	for pkg, since := range l.running {
		names = append(names, fmt.Sprintf("%s (%s)", pkg, now.Sub(since).Round(time.Second)))
	}
	sort.Strings(names)
	l.printLocked("... still running: " + strings.Join(names, ", ") + "\n")
}

// hasFailed reports whether a package or a build failed.
func (l *lines) hasFailed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}
