package admin

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
)

// PluginStatus is one plugin in GET /v1/status.
type PluginStatus struct {
	Name     string    `json:"name"`
	State    string    `json:"state"`
	PID      int       `json:"pid,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Uptime   string    `json:"uptime,omitempty"`
	Restarts int       `json:"restarts"`
	Critical bool      `json:"critical,omitempty"`
	Tools    []string  `json:"tools"`
	// Held are the plugin's tools held absent, "name: why" each.
	Held      []string `json:"held,omitempty"`
	LastError string   `json:"last_error,omitempty"`
	// LastExit says how the plugin's last process to crash ended, and
	// Stderr holds the last lines that process wrote to stderr.
	LastExit string   `json:"last_exit,omitempty"`
	Stderr   []string `json:"stderr,omitempty"`
	// Sandbox says whether the plugin's process is confined: "enforced",
	// "partial" (gaps says what is not) or "off".
	Sandbox Sandbox `json:"sandbox"`
	// Problem is what the running process reports keeps it from doing its
	// job (an audit log that cannot be written).
	Problem string `json:"problem,omitempty"`
	// Calls says how the host calls the running process: "lanes",
	// "stream" or "rpc" (see remote.Status.Calls).
	Calls string `json:"calls,omitempty"`
	// Protocol is the plugin protocol version the process speaks.
	Protocol int `json:"protocol,omitempty"`
	// Registered counts the tools the plugin registered since it was
	// loaded, each registration once (see remote.Status.Registered).
	Registered int64 `json:"registered"`
	// Egress counts the connections the plugin asked its egress proxy
	// for; set for a plugin whose sandbox has an egress list.
	Egress *EgressStatus `json:"egress,omitempty"`
}

// EgressStatus is a plugin's connections through its egress proxy since
// it was loaded.
type EgressStatus struct {
	Allowed int64 `json:"allowed"`
	Refused int64 `json:"refused"`
	// LastRefused is the last refusal, "host:port: why".
	LastRefused string `json:"last_refused,omitempty"`
}

// Status is GET /v1/status.
type Status struct {
	Version string         `json:"version"`
	PID     int            `json:"pid"`
	Uptime  string         `json:"uptime"`
	Plugins []PluginStatus `json:"plugins"`
}

// Tool is one tool in GET /v1/tools.
type Tool struct {
	Name        string          `json:"name"`
	Owner       string          `json:"owner"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Destructive bool            `json:"destructive,omitempty"`
	ReadOnly    bool            `json:"read_only,omitempty"`
	Idempotent  bool            `json:"idempotent,omitempty"`
	Timeout     string          `json:"timeout,omitempty"`
	// Notes, Held and Definition are set for tools bridged from a source
	// their plugin does not vouch for (see pipeline.ToolInfo).
	Notes      []string `json:"notes,omitempty"`
	Held       string   `json:"held,omitempty"`
	Definition string   `json:"definition,omitempty"`
	// Kind is "" for a tool, else "resources", "resource" or "prompt"
	// (see pipeline.ToolInfo.Kind).
	Kind string `json:"kind,omitempty"`
}

// CallRequest is POST /v1/call.
type CallRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Interactive says the client can answer approval questions.
	Interactive bool `json:"interactive,omitempty"`
}

// ExplainRequest is POST /v1/explain: what `host explain` asks.
type ExplainRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// As is the principal to explain the call for; the client's own (the
	// socket's peer) when absent.
	As *Principal `json:"as,omitempty"`
}

// Principal is who a call is made for, on the admin API.
type Principal struct {
	ID         string   `json:"id"`
	Kind       string   `json:"kind"`
	Attributes []string `json:"attributes,omitempty"`
}

// Explanation is POST /v1/explain's answer (pipeline.Explanation).
type Explanation = pipeline.Explanation

// Error is a failed call's code and message.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Result is a call's result, as `host call --json` prints it.
type Result struct {
	ID        string          `json:"id"`
	OK        bool            `json:"ok"`
	Value     json.RawMessage `json:"value"`
	Error     *Error          `json:"error"`
	DecidedBy string          `json:"decided_by"`
	// Receipt is where the audit recorded the call; only when the
	// deployment asks for receipts.
	Receipt *Receipt `json:"receipt,omitempty"`
}

// Receipt is an audit receipt: the audit plugin's name, and the seq and
// hash of the call's line in its log. `audit prove SEQ LOG` turns it into
// a proof that `audit verify-proof` checks offline.
type Receipt struct {
	Plugin string `json:"plugin"`
	Seq    uint64 `json:"seq"`
	Hash   string `json:"hash"`
}

// CallEvent is one line of a call's response stream.
type CallEvent struct {
	Question *Question `json:"question,omitempty"`
	// AnswerKey comes with a question: the answer must carry it back.
	// Only the client that made the call sees it.
	AnswerKey string  `json:"answer_key,omitempty"`
	Result    *Result `json:"result,omitempty"`
	// Waiting says the call waits for the approvers of a route.
	Waiting *Waiting `json:"waiting,omitempty"`
	// Elicitation is a plugin's question to the caller during the call (a
	// bridged server's elicitation/create), sent with an AnswerKey.
	Elicitation *Elicitation `json:"elicitation,omitempty"`
}

// Answer is POST /v1/answer. It is accepted only with the question's
// AnswerKey and from the process that made the call.
type Answer struct {
	ID       string `json:"id"`
	Key      string `json:"key"`
	Approved bool   `json:"approved"`
	// Elicited answers an Elicitation: an MCP ElicitResult (action
	// accept, decline or cancel, and a form's content).
	Elicited json.RawMessage `json:"elicited,omitempty"`
}

// ReloadRequest is POST /v1/reload; an empty Plugin reloads the file.
type ReloadRequest struct {
	Plugin string `json:"plugin,omitempty"`
}

// Message is the body of a simple answer or an error.
type Message struct {
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
	// Restart names the host settings a reload found changed and could
	// not apply: they take effect when the host is started again.
	Restart []string `json:"restart,omitempty"`
}

// NeedsRestart is a reload that did what it could (Summary) and found host
// settings changed that take effect only at restart: the run loop's Reload
// returns it, the API answers it as a Message with Restart, and
// Client.Reload returns it again, so the CLI can say so in its own output
// and exit code rather than only in the host's log.
type NeedsRestart struct {
	Summary  string
	Settings []string
}

func (e *NeedsRestart) Error() string {
	return e.Summary + "\nhost settings changed: " + strings.Join(e.Settings, ", ") + ": takes effect at restart"
}

// FromResult converts a pipeline result for the wire.
func FromResult(r pipeline.Result) Result {
	out := Result{ID: r.ID, OK: r.OK, DecidedBy: r.DecidedBy, Value: r.JSONValue()}
	if r.Error != nil {
		out.Error = &Error{Code: string(r.Error.Code), Message: r.Error.Message}
	}
	if rc := r.Receipt; rc != nil {
		out.Receipt = &Receipt{Plugin: rc.Plugin, Seq: rc.Seq, Hash: rc.Hash}
	}
	return out
}
