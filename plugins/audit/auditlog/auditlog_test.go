package auditlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 5, 4, 10, 20, 30, 123456789, time.UTC)

// sample returns the i-th of a varied set of lines: every outcome, awkward
// strings, recorded and unrecorded arguments.
func sample(i int) Line {
	codes := []string{"", "UNKNOWN_TOOL", "INVALID_ARGUMENTS", "DENIED", "BLOCKED", "TOOL_ERROR", "TOOL_TIMEOUT", "ABORTED"}
	code := codes[i%len(codes)]
	args := fmt.Appendf(nil, `{"a":%d,"s":"x<y>&\"z\" é"}`, i)
	l := Line{
		Time:       t0.Add(time.Duration(i) * 1500 * time.Microsecond),
		ID:         fmt.Sprintf("call-%d", i),
		Caller:     "cli",
		Tool:       "add",
		OK:         code == "",
		Code:       code,
		Duration:   time.Duration(i)*time.Millisecond + 250*time.Microsecond,
		ArgsSHA256: Digest(args),
	}
	if code == "DENIED" || code == "BLOCKED" {
		l.DecidedBy = "safety\t\"rule\"\n"
	}
	if i%2 == 1 {
		l.Arguments = ArgumentsJSON(args)
	}
	return l
}

// chain writes n sample lines and returns the log.
func chain(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, Genesis)
	for i := range n {
		if _, err := w.Append(sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func lines(log []byte) [][]byte {
	return bytes.SplitAfter(log, []byte("\n"))[:bytes.Count(log, []byte("\n"))]
}

func join(ls [][]byte) []byte { return bytes.Join(ls, nil) }

func TestChainVerifies(t *testing.T) {
	for _, n := range []int{0, 1, 2, 9} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := Verify(bytes.NewReader(chain(t, n)))
			if err != nil || got != n {
				t.Fatalf("Verify = %d, %v; want %d, nil", got, err, n)
			}
		})
	}
}

// The package doc's definition, computed from scratch: a verifier in
// another language implements exactly this.
func TestHashDefinition(t *testing.T) {
	log := chain(t, 3)
	prev := strings.Repeat("0", 64)
	for i, line := range lines(log) {
		text := strings.TrimSuffix(string(line), "\n")
		at := strings.LastIndex(text, `,"hash":"`)
		if at < 0 || !strings.HasSuffix(text, `"}`) {
			t.Fatalf("line %d: no hash member at the end: %s", i+1, text)
		}
		body := text[:at] + "}"
		hash := text[at+len(`,"hash":"`) : len(text)-2]
		if !strings.Contains(body, `,"prev":"`+prev+`"}`) {
			t.Errorf("line %d: body does not end with prev %s: %s", i+1, prev, body)
		}
		sum := sha256.Sum256([]byte(prev + body))
		if want := hex.EncodeToString(sum[:]); hash != want {
			t.Errorf("line %d: hash %s, want sha256(prev||body) = %s", i+1, hash, want)
		}
		prev = hash
	}
}

func TestLineFormat(t *testing.T) {
	l := Line{
		Time: time.Date(2026, 5, 4, 12, 20, 30, 120000000, time.FixedZone("CEST", 7200)),
		ID:   "c-1", Caller: "cli", Tool: "add", OK: true,
		Duration:   1250 * time.Microsecond,
		ArgsSHA256: Digest([]byte(`{"a":2,"b":3}`)),
	}
	var buf bytes.Buffer
	if _, err := NewWriter(&buf, Genesis).Append(l); err != nil {
		t.Fatal(err)
	}
	want := `{"seq":1,"time":"2026-05-04T10:20:30.12Z","id":"c-1","caller":"cli","tool":"add","ok":true,"code":"","decided_by":"",` +
		`"duration_ms":1.25,"args_sha256":"` + Digest([]byte(`{"a":2,"b":3}`)) + `","prev":"` + ZeroHash + `","hash":"`
	if got := buf.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "\"}\n") || len(got) != len(want)+64+3 {
		t.Errorf("line =\n%s\nwant\n%s<64 hex>\"}", got, want)
	}
	// The line is also plain JSON to any reader.
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["arguments"]; ok {
		t.Error("arguments written though not recorded")
	}
	if _, ok := m["principal"]; ok {
		t.Error("a principal written for a call made for nobody")
	}

	// A call made for someone names them after the caller.
	l.Principal, l.PrincipalKind = "ann", "user"
	if got := string(l.Body()); !strings.Contains(got, `"caller":"cli","principal":"ann","principal_kind":"user","tool":"add"`) {
		t.Errorf("body = %s", got)
	}
	// Both or neither: a line with one of them is not in canonical form.
	half := bytes.Replace(l.Text(), []byte(`,"principal_kind":"user"`), nil, 1)
	if _, err := ParseLine(half); err == nil {
		t.Errorf("ParseLine accepted %s", half)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		line Line
	}{
		{"sample", func() Line { l := sample(3); l.Seal(ZeroHash); return l }()},
		{"control bytes and unicode", Line{ID: "a\x00\x1f\x7f\u2028<>&/é😀", Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"arguments not JSON", Line{Arguments: ArgumentsJSON([]byte("{nope")), Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"empty arguments", Line{Arguments: ArgumentsJSON(nil), Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"null arguments", Line{Arguments: ArgumentsJSON([]byte("null")), Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"negative duration", Line{Duration: -1500 * time.Microsecond, Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"longest duration", Line{Duration: math.MaxInt64, Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"shortest duration", Line{Duration: math.MinInt64, Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"one nanosecond", Line{Duration: 1, Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
		{"principal", Line{Principal: "alice", PrincipalKind: "local", Time: t0, Prev: ZeroHash, Hash: ZeroHash}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.line.Text()
			got, err := ParseLine(text)
			if err != nil {
				t.Fatalf("ParseLine(%s): %v", text, err)
			}
			again := got.Text()
			if !bytes.Equal(again, text) || got.Duration != tc.line.Duration || !got.Time.Equal(tc.line.Time) {
				t.Errorf("round trip changed the line:\n%s\n%s", text, again)
			}
		})
	}
}

func TestArgumentsJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"{ \"a\" : [1, 2] }\n", `{"a":[1,2]}`},
		{`{"h":"<&>"}`, `{"h":"<&>"}`},
		{`{nope`, `"{nope"`},
		{``, `""`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := string(ArgumentsJSON([]byte(tc.in))); got != tc.want {
				t.Errorf("ArgumentsJSON(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestTamperOneByte changes one byte at every position of line k, to
// several values, and expects the report at line k, whatever the byte was:
// in a value, a key, the prev, the hash, the braces or the newline.
func TestTamperOneByte(t *testing.T) {
	const n = 6
	log := chain(t, n)
	ls := lines(log)
	for _, k := range []int{1, 3, n} {
		t.Run(fmt.Sprintf("line %d", k), func(t *testing.T) {
			t.Parallel()
			start := len(join(ls[:k-1]))
			for pos := start; pos < start+len(ls[k-1]); pos++ {
				for _, b := range []byte{log[pos] ^ 0x01, log[pos] ^ 0x20, log[pos] ^ 0x80, ' ', '\n', '"'} {
					if b == log[pos] {
						continue
					}
					bad := bytes.Clone(log)
					bad[pos] = b
					_, err := Verify(bytes.NewReader(bad))
					var te *TamperError
					var pe *PartialLineError
					if pos == len(log)-1 && errors.As(err, &pe) && pe.Line == k {
						// The last line's newline changed: as if the log
						// were cut one byte short, which only an anchor
						// kept elsewhere can show (VerifyAnchor).
						continue
					}
					if !errors.As(err, &te) || te.Line != k {
						t.Fatalf("byte %d of line %d (%q→%q): Verify = %v, want a TamperError at line %d",
							pos-start, k, log[pos], b, err, k)
					}
				}
			}
		})
	}
}

// The reason names what was changed, for the positions a person would try.
func TestTamperReasons(t *testing.T) {
	log := chain(t, 5)
	const k = 3
	ls := lines(log)
	line := string(ls[k-1])
	at := func(s string) int { return len(join(ls[:k-1])) + strings.Index(line, s) + len(s) }
	for _, tc := range []struct {
		name string
		pos  int
		to   byte
		want string
	}{
		{"value", at(`"caller":"`), 'X', "hash does not match"},
		{"time", at(`"time":"202`), '7', "hash does not match"},
		{"digest", at(`"args_sha256":"`), 'e', "hash does not match"},
		{"prev", at(`"prev":"`) + 10, 'e', "prev does not match"},
		{"hash", at(`"hash":"`) + 63, 'e', "hash does not match"},
		{"hash not hex", at(`"hash":"`), 'X', "hash is not 64 lowercase hex"},
		{"seq", at(`"seq":`), '7', "seq is 7, want 3"},
		{"key case", at(`"`), 'S', "not in canonical form"},
		{"space", at(`"ok":`) - 1, ' ', "bad JSON"},
		{"quote", at(`"tool":`), '\'', "bad JSON"},
		{"newline", len(join(ls[:k])) - 1, ' ', "bad JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(log)
			bad[tc.pos] = tc.to
			n, err := Verify(bytes.NewReader(bad))
			var te *TamperError
			if !errors.As(err, &te) || te.Line != k || !strings.Contains(te.Reason, tc.want) || n != k-1 {
				t.Errorf("Verify = %d, %v; want %d, line %d: %q", n, err, k-1, k, tc.want)
			}
		})
	}
}

func TestTamperLines(t *testing.T) {
	const n = 6
	ls := lines(chain(t, n))
	swap := func(i, j int) [][]byte {
		out := append([][]byte(nil), ls...)
		out[i], out[j] = out[j], out[i]
		return out
	}
	without := func(i int) [][]byte {
		out := append([][]byte(nil), ls[:i]...)
		return append(out, ls[i+1:]...)
	}
	for _, tc := range []struct {
		name     string
		log      [][]byte
		wantLine int
		want     string
	}{
		{"delete first", without(0), 1, "seq is 2, want 1"},
		{"delete line 3", without(2), 3, "seq is 4, want 3"},
		{"delete next to last", without(n - 2), n - 1, "seq is 6, want 5"},
		{"swap 1 and 2", swap(0, 1), 1, "seq is 2, want 1"},
		{"swap 3 and 4", swap(2, 3), 3, "seq is 4, want 3"},
		{"swap 2 and 5", swap(1, 4), 2, "seq is 5, want 2"},
		{"duplicate line 2", append(append(append([][]byte(nil), ls[:2]...), ls[1]), ls[2:]...), 3, "seq is 2, want 3"},
		{"blank line", append(append(append([][]byte(nil), ls[:2]...), []byte("\n")), ls[2:]...), 3, "bad JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(join(tc.log)))
			var te *TamperError
			if !errors.As(err, &te) || te.Line != tc.wantLine || !strings.Contains(te.Reason, tc.want) {
				t.Errorf("Verify = %v; want line %d: %q", err, tc.wantLine, tc.want)
			}
		})
	}
}

// A renumbered and rehashed line is a forgery only a reader with another
// record of the chain can catch: the prev of the line after it still
// points at the original.
func TestForgedLineBreaksTheNext(t *testing.T) {
	ls := lines(chain(t, 4))
	forged, err := ParseLine(bytes.TrimSuffix(ls[1], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	forged.OK, forged.Code = true, ""
	forged.Seal(forged.Prev)
	text := forged.Text()
	ls[1] = append(text, '\n')
	_, err = Verify(bytes.NewReader(join(ls)))
	var te *TamperError
	if !errors.As(err, &te) || te.Line != 3 || !strings.Contains(te.Reason, "prev does not match") {
		t.Errorf("Verify = %v; want line 3: prev does not match", err)
	}
}

// Cutting whole lines off the end leaves a valid, shorter chain: the
// limitation the package doc states. The tip shows it.
func TestTruncationNeedsTheTip(t *testing.T) {
	log := chain(t, 4)
	full, err := ReadTip(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	cut, err := ReadTip(bytes.NewReader(join(lines(log)[:3])))
	if err != nil {
		t.Fatal(err)
	}
	if cut == full || cut.Seq != 3 || full.Seq != 4 {
		t.Errorf("tips %+v and %+v", cut, full)
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Verify(io.MultiReader(bytes.NewReader(chain(t, 2)), iotest.ErrReader(boom)))
	var te *TamperError
	if !errors.Is(err, boom) || errors.As(err, &te) {
		t.Errorf("Verify = %v; want the read error, not a TamperError", err)
	}
}

// A line longer than any buffer: arguments can be as large as a message.
func TestLongLine(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Genesis)
	big := fmt.Appendf(nil, `{"s":%q}`, strings.Repeat("x", 256<<10))
	for range 2 {
		if _, err := w.Append(Line{Time: t0, ArgsSHA256: Digest(big), Arguments: ArgumentsJSON(big)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := Verify(&buf); n != 2 || err != nil {
		t.Errorf("Verify = %d, %v", n, err)
	}
}

func TestWriterContinues(t *testing.T) {
	first := chain(t, 3)
	tip, err := ReadTip(bytes.NewReader(first))
	if err != nil || tip.Seq != 3 {
		t.Fatalf("ReadTip = %+v, %v", tip, err)
	}
	var more bytes.Buffer
	w := NewWriter(&more, tip)
	for i := 3; i < 5; i++ {
		if _, err := w.Append(sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(append(first, more.Bytes()...), chain(t, 5)) {
		t.Error("a continued log differs from one written in one go")
	}
	if w.Tip().Seq != 5 {
		t.Errorf("tip = %+v", w.Tip())
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriterStopsAfterAFailedWrite(t *testing.T) {
	w := NewWriter(&failWriter{n: 1}, Genesis)
	if _, err := w.Append(sample(0)); err != nil {
		t.Fatal(err)
	}
	_, err1 := w.Append(sample(1))
	_, err2 := w.Append(sample(2))
	if err1 == nil || !errors.Is(err2, err1) && err2.Error() != err1.Error() {
		t.Errorf("errors %v, %v; want the first failure, twice", err1, err2)
	}
	if w.Tip().Seq != 1 {
		t.Errorf("tip = %+v, want seq 1", w.Tip())
	}
}

func TestWriterConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Genesis)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := w.Append(sample(g*50 + i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n, err := Verify(&buf); n != 400 || err != nil {
		t.Errorf("Verify = %d, %v", n, err)
	}
}

func TestParseMillis(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "0", want: 0},
		{in: "1.5", want: 1500 * time.Microsecond},
		{in: "0.000001", want: 1},
		{in: "-2.25", want: -2250 * time.Microsecond},
		{in: "9223372036854.775807", want: math.MaxInt64},
		{in: "-9223372036854.775808", want: math.MinInt64},
		{in: "9223372036854.775808", bad: true},
		{in: "1.0000001", bad: true},
		{in: "1e3", bad: true},
		{in: "", bad: true},
		{in: ".5", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseMillis(tc.in)
			if (err != nil) != tc.bad || got != tc.want {
				t.Errorf("parseMillis(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

// ReadTail verifies as ReadTip does and keeps the ids of the last n lines,
// in the order they are in the log.
func TestReadTail(t *testing.T) {
	log := chain(t, 7)
	ids := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("call-%d", i))
		}
		return out
	}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, nil},
		{1, ids(6, 7)},
		{3, ids(4, 7)},
		{7, ids(0, 7)},
		{100, ids(0, 7)},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			tip, got, err := ReadTail(bytes.NewReader(log), tc.n)
			want, _ := ReadTip(bytes.NewReader(log))
			if err != nil || tip != want || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("ReadTail(%d) = %+v, %q, %v; want %+v, %q", tc.n, tip, got, err, want, tc.want)
			}
		})
	}
	// A broken log: the ids of the intact lines before the bad one.
	bad := bytes.Replace(log, []byte(`"call-5"`), []byte(`"call-X"`), 1)
	_, got, err := ReadTail(bytes.NewReader(bad), 2)
	var te *TamperError
	if !errors.As(err, &te) || te.Line != 6 || fmt.Sprint(got) != fmt.Sprint(ids(3, 5)) {
		t.Errorf("ReadTail of a broken log = %q, %v; want %q and line 6", got, err, ids(3, 5))
	}
}

// A log that ends in part of a line is intact up to it: the part is
// reported as such, not as tampering.
func TestPartialLastLine(t *testing.T) {
	ls := lines(chain(t, 3))
	for _, tc := range []struct {
		name string
		log  [][]byte
		part int
	}{
		{"cut short", [][]byte{ls[0], ls[1][:40]}, 40},
		{"newline removed at the end", [][]byte{ls[0], bytes.TrimSuffix(ls[1], []byte("\n"))}, len(ls[1]) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Verify(bytes.NewReader(join(tc.log)))
			var pe *PartialLineError
			if !errors.As(err, &pe) || pe.Line != 2 || pe.Bytes != tc.part || n != 1 {
				t.Errorf("Verify = %d, %v; want 1 line, then a partial line 2 of %d bytes", n, err, tc.part)
			}
		})
	}
}

// VerifyAnchor finds a published head in the chain, and reports a log that
// lost it (cut before it).
func TestVerifyAnchor(t *testing.T) {
	log := chain(t, 5)
	ls := lines(log)
	third, err := ParseLine(bytes.TrimSuffix(ls[2], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	n, at, err := VerifyAnchor(bytes.NewReader(log), third.Hash)
	if err != nil || n != 5 || at != 3 {
		t.Errorf("VerifyAnchor = %d, %d, %v; want 5 lines, the anchor at 3", n, at, err)
	}
	n, at, err = VerifyAnchor(bytes.NewReader(join(ls[:2])), third.Hash)
	if err != nil || n != 2 || at != 0 {
		t.Errorf("VerifyAnchor of a log cut before it = %d, %d, %v; want 2 lines, no anchor", n, at, err)
	}
}

// TestShadowMember: a line's shadow decisions are in its canonical form and
// its hash; a line without them has no shadow member, and one spelled
// otherwise (an empty list, a member left out) is not canonical.
func TestShadowMember(t *testing.T) {
	l := Line{Seq: 1, Time: time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC), ID: "c-1", Caller: "cli", Tool: "rm",
		OK: true, ArgsSHA256: Digest(nil),
		Shadow: []Shadow{{Stage: 2, Plugin: "safety", Rule: "no_rm", Would: "DENIED", Reason: `denied by "no_rm"`}, {Stage: 1, Plugin: "p", Would: "ASK"}}}
	l.Seal(ZeroHash)
	text := l.Text()
	want := `,"shadow":[{"stage":2,"plugin":"safety","rule":"no_rm","would":"DENIED","reason":"denied by \"no_rm\""},{"stage":1,"plugin":"p","rule":"","would":"ASK","reason":""}],"prev":`
	if !bytes.Contains(text, []byte(want)) {
		t.Fatalf("line %s\nlacks %s", text, want)
	}
	back, err := ParseLine(text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Shadow, l.Shadow) || back.Hash != l.Hash {
		t.Fatalf("parsed %+v", back.Shadow)
	}
	changed := l
	changed.Shadow = []Shadow{l.Shadow[0]}
	if changed.Seal(ZeroHash); changed.Hash == l.Hash {
		t.Fatal("the hash does not cover the shadow member")
	}
	for _, bad := range []string{
		strings.Replace(string(text), want, `,"shadow":[],"prev":`, 1),
		strings.Replace(string(text), `,"rule":"",`, `,`, 1),
	} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	plain := Line{Seq: 1, ID: "c-2", ArgsSHA256: Digest(nil)}
	plain.Seal(ZeroHash)
	if bytes.Contains(plain.Text(), []byte("shadow")) {
		t.Fatalf("a line without shadow decisions: %s", plain.Text())
	}
}
