package remote

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestStderrTailKeepsLastLines(t *testing.T) {
	var tail stderrTail
	for i := range 50 {
		fmt.Fprintf(&tail, "line %d\n", i)
	}
	got := tail.Lines()
	if len(got) != tailLines {
		t.Fatalf("kept %d lines, want %d", len(got), tailLines)
	}
	if got[0] != "line 30" || got[len(got)-1] != "line 49" {
		t.Fatalf("kept %q .. %q, want line 30 .. line 49", got[0], got[len(got)-1])
	}
}

func TestStderrTailBoundsBytes(t *testing.T) {
	var tail stderrTail
	long := strings.Repeat("x", 400)
	for i := range tailLines {
		fmt.Fprintf(&tail, "%02d %s\n", i, long)
	}
	got := tail.Lines()
	size := 0
	for _, l := range got {
		size += len(l)
	}
	if size > tailBytes {
		t.Fatalf("kept %d bytes, want at most %d", size, tailBytes)
	}
	if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], fmt.Sprintf("%02d ", tailLines-1)) {
		t.Fatalf("the newest line is not kept: %q", got)
	}
	if want := tailBytes / (len(long) + 3); len(got) != want {
		t.Fatalf("kept %d lines of %d bytes, want %d", len(got), len(long)+3, want)
	}
}

func TestStderrTailCutsLongLines(t *testing.T) {
	var tail stderrTail
	// A line longer than the limit, written in pieces as go-plugin does
	// when a line exceeds its reader's buffer, then a short one.
	for range 10 {
		tail.Write([]byte(strings.Repeat("ab", 100)))
	}
	tail.Write([]byte("\nshort\n"))
	got := tail.Lines()
	if len(got) != 2 || got[1] != "short" {
		t.Fatalf("lines = %q, want a cut line then short", got)
	}
	if !strings.HasSuffix(got[0], "…") || len(got[0]) != tailLineBytes+len("…") {
		t.Fatalf("long line kept as %d bytes (%q...), want %d and a trailing …", len(got[0]), got[0][:10], tailLineBytes+len("…"))
	}
}

func TestStderrTailCutKeepsValidUTF8(t *testing.T) {
	var tail stderrTail
	// "é" is two bytes: with an odd prefix, the cut falls inside one.
	tail.Write([]byte("x" + strings.Repeat("é", tailLineBytes) + "\n"))
	got := tail.Lines()
	if len(got) != 1 || !utf8.ValidString(got[0]) || strings.ContainsRune(got[0], utf8.RuneError) {
		t.Fatalf("cut line is not clean UTF-8: %q", got)
	}
}

func TestStderrTailChunksAndPartialLine(t *testing.T) {
	var tail stderrTail
	// go-plugin writes a line, then its newline, separately.
	for _, chunk := range []string{"first", "\n", "sec", "ond\nthi", "rd"} {
		if n, err := tail.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got, want := tail.Lines(), []string{"first", "second", "third"}; !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}

func TestStderrTailCleansLines(t *testing.T) {
	var tail stderrTail
	tail.Write([]byte("\x1b[31mred\x1b[0m\r\n\n   \n\tat frame\t\n\xff bad\n"))
	want := []string{"[31mred[0m", "\tat frame", "\uFFFD bad"}
	if got := tail.Lines(); !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}

// Debug lines (go-plugin's handshake) are left out of the tail.
func TestStderrTailRendersHclogLines(t *testing.T) {
	var tail stderrTail
	tail.Write([]byte(`{"@level":"error","@message":"cannot open","@module":"files","@timestamp":"2026-01-02T03:04:05Z","path":"/data/a b","tries":3}` + "\n"))
	tail.Write([]byte(`{"@level":"info","@message":"ready"}` + "\n"))
	tail.Write([]byte(`{"@level":"debug","@message":"plugin address","network":"unix"}` + "\n"))
	tail.Write([]byte(`{"not":"a log line"}` + "\n"))
	want := []string{`[ERROR] cannot open: path="/data/a b" tries=3`, "[INFO] ready", `{"not":"a log line"}`}
	if got := tail.Lines(); !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}

func TestStderrTailVeryLongLine(t *testing.T) {
	var tail stderrTail
	// Longer than the raw line buffer: kept cut, never parsed.
	tail.Write([]byte(`{"@message":"` + strings.Repeat("y", 3*tailBytes) + `"}` + "\nafter\n"))
	got := tail.Lines()
	if len(got) != 2 || got[1] != "after" || !strings.HasPrefix(got[0], `{"@message":"yyy`) || !strings.HasSuffix(got[0], "…") {
		t.Fatalf("lines = %q", got)
	}
	if len(got[0]) > tailLineBytes+len("…") {
		t.Fatalf("kept a %d-byte line", len(got[0]))
	}
}

func TestStderrTailNil(t *testing.T) {
	var tail *stderrTail
	if got := tail.Lines(); got != nil {
		t.Fatalf("nil tail has lines %q", got)
	}
}

func TestStderrTailConcurrent(t *testing.T) {
	var tail stderrTail
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				fmt.Fprintf(&tail, "w%d %d\n", w, i)
				_ = tail.Lines()
			}
		}()
	}
	wg.Wait()
	if got := tail.Lines(); len(got) != tailLines {
		t.Fatalf("kept %d lines, want %d", len(got), tailLines)
	}
}

func TestDescribeExit(t *testing.T) {
	if got := describeExit(nil); got != "exit status unknown" {
		t.Fatalf("describeExit(nil) = %q", got)
	}
}
