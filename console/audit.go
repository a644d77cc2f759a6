package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// Bounds of the audit page: it reads at most the log's last auditTail
// bytes and shows at most auditShown lines, newest first.
const (
	auditTail  = 4 << 20
	auditShown = 200
)

// auditFilter is the audit page's query: each field empty or a match.
type auditFilter struct {
	// Tool is a tool name or a glob (path.Match).
	Tool string
	// Principal is KIND:ID as the page shows it ("agent:ci-bot").
	Principal string
	// Outcome is "ok", "failed" (any code) or a code ("DENIED").
	Outcome string
}

func (f auditFilter) matches(e auditEntry) bool {
	if f.Tool != "" && f.Tool != e.Tool {
		if ok, _ := path.Match(f.Tool, e.Tool); !ok {
			return false
		}
	}
	if f.Principal != "" && f.Principal != e.Principal {
		return false
	}
	switch f.Outcome {
	case "":
	case "ok":
		return e.OK
	case "failed":
		return !e.OK
	default:
		return strings.EqualFold(f.Outcome, e.Outcome)
	}
	return true
}

// auditEntry is an audit line as the page shows it: the arguments with
// every credential replaced by its marker, and cut short.
type auditEntry struct {
	Seq       uint64
	Time      time.Time
	Tool      string
	Principal string
	Caller    string
	OK        bool
	Outcome   string // OK, or the result code
	DecidedBy string
	Shown     string // the arguments, redacted; "" when not recorded
	Route     string // the approval route that decided the call's Ask
}

// outcomes are the choices of the page's outcome filter.
var outcomes = []string{"ok", "failed", "DENIED", "BLOCKED", "TOOL_ERROR", "TOOL_TIMEOUT", "UNKNOWN_TOOL", "INVALID_ARGUMENTS", "ABORTED"}

func (con *Console) auditPage(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	f := auditFilter{Tool: strings.TrimSpace(q.Get("tool")), Principal: strings.TrimSpace(q.Get("principal")), Outcome: q.Get("outcome")}
	data := map[string]any{"Who": s.who.String(), "CSRF": s.csrf, "Page": "audit", "Filter": f, "Outcomes": outcomes, "Log": con.c.AuditLog}
	if con.c.AuditLog == "" {
		data["Error"] = "no audit log is set: name it in the console block, audit_log = \"run/audit/audit.log\""
		con.render(w, "audit.html", data)
		return
	}
	lines, partial, err := con.readAudit(f)
	if err != nil {
		con.c.Log.Error("console: read the audit log", "path", con.c.AuditLog, "error", err)
		data["Error"] = "cannot read the audit log: " + err.Error()
	}
	data["Lines"], data["Partial"], data["Max"] = lines, partial, auditShown
	con.render(w, "audit.html", data)
}

// readAudit returns the log's most recent lines that f matches, newest
// first, at most auditShown; partial says the log is longer than what was
// read. A line that does not parse is skipped (audit verify is the tool
// for a log's integrity; the page shows what it can).
func (con *Console) readAudit(f auditFilter) (out []auditEntry, partial bool, err error) {
	file, err := os.Open(con.c.AuditLog)
	if err != nil {
		return nil, false, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, false, err
	}
	from := st.Size() - auditTail
	if from > 0 {
		partial = true
		if _, err := file.Seek(from, io.SeekStart); err != nil {
			return nil, false, fmt.Errorf("seek: %w", err)
		}
	}
	buf, err := io.ReadAll(io.LimitReader(file, auditTail))
	if err != nil {
		return nil, false, err
	}
	if partial {
		// The first line read is most likely cut: skip to the next one.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	lines := bytes.Split(buf, []byte("\n"))
	for i := len(lines) - 1; i >= 0 && len(out) < auditShown; i-- {
		text := bytes.TrimSpace(lines[i])
		if len(text) == 0 || auditlog.IsCheckpoint(text) {
			continue
		}
		l, perr := auditlog.ParseLine(text)
		if perr != nil {
			continue
		}
		e := con.entry(l)
		if f.matches(e) {
			out = append(out, e)
		}
	}
	return out, partial, nil
}

// entry is l as the page shows it.
func (con *Console) entry(l auditlog.Line) auditEntry {
	e := auditEntry{Seq: l.Seq, Time: l.Time, Tool: l.Tool, Caller: l.Caller, OK: l.OK, Outcome: "OK", DecidedBy: l.DecidedBy}
	if l.PrincipalKind != "" || l.Principal != "" {
		e.Principal = l.PrincipalKind + ":" + l.Principal
	}
	if !l.OK {
		e.Outcome = l.Code
	}
	if l.Arguments != nil {
		red, _, err := con.scan.RedactJSON(l.Arguments)
		if err != nil {
			e.Shown = "(not shown: " + err.Error() + ")"
		} else {
			e.Shown = cut(compactJSON(red), 240)
		}
	}
	if l.Approval != nil {
		var a struct {
			Route string `json:"route"`
		}
		if json.Unmarshal(l.Approval, &a) == nil {
			e.Route = a.Route
		}
	}
	return e
}

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// cut shortens s to n runes, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
