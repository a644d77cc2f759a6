package e2e

import (
	"encoding/xml"

	"github.com/plugkit-go/plugkit/host"
)

// What the CLI prints and exits with, as docs/cli.md documents it: the
// system tests read the host's output as a user's program would, so they
// hold their own copy of the contract instead of the CLI's types (a
// change to the output must change these too, which is the point).

// The exit codes of host commands.
const (
	exitOK            = 0
	exitFailed        = 1
	exitUsage         = 2
	exitWouldDeny     = 3 // host explain: the call would be refused
	exitWouldAsk      = 4 // host explain: the call would be asked
	exitRestart       = 5 // host run: a reload that needs a restart
	exitReplayChanged = 6 // host replay: a change --fail-on forbids
)

// Version is the version the host reports.
const Version = host.Version

// The health endpoints on the metrics listener.
const (
	healthzPath = "/healthz"
	readyzPath  = "/readyz"
)

// orDash is s, or "-" when s is empty, for a test's report.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// replayReport is what `host replay --json` prints.
type replayReport struct {
	Candidate         string         `json:"candidate"`
	Calls             int            `json:"calls"`
	Judged            int            `json:"judged"`
	Unchanged         int            `json:"unchanged"`
	Changed           int            `json:"changed"`
	Loosened          int            `json:"loosened"`
	Tightened         int            `json:"tightened"`
	Groups            []*replayGroup `json:"groups"`
	NotJudged         []replayedCall `json:"not_judged"`
	WithoutAttributes int            `json:"without_attributes"`
	WithoutArguments  int            `json:"without_arguments"`
	Seconds           float64        `json:"seconds"`
	CallsPerSec       float64        `json:"calls_per_second"`
	Changes           []replayedCall `json:"changes"`
}

// replayGroup is the changed calls of one direction and deciding rule.
type replayGroup struct {
	Direction string         `json:"direction"`
	DecidedBy string         `json:"decided_by"`
	Rule      string         `json:"rule,omitempty"`
	Count     int            `json:"count"`
	Examples  []replayedCall `json:"examples"`
}

// replayedCall is one recorded call as replay judged it.
type replayedCall struct {
	File                string   `json:"file"`
	Seq                 uint64   `json:"seq"`
	ID                  string   `json:"id"`
	Tool                string   `json:"tool"`
	Principal           string   `json:"principal"`
	Attributes          []string `json:"attributes,omitempty"`
	AttributesUnknown   bool     `json:"attributes_unknown,omitempty"`
	Arguments           string   `json:"arguments,omitempty"`
	ArgumentsUnrecorded bool     `json:"arguments_unrecorded,omitempty"`
	Was                 string   `json:"was"`
	WasBy               string   `json:"was_decided_by,omitempty"`
	Now                 string   `json:"now,omitempty"`
	NowBy               string   `json:"now_decided_by,omitempty"`
	Rule                string   `json:"rule,omitempty"`
	Reason              string   `json:"reason,omitempty"`
}

// A replay group's direction, and how many examples it shows.
const (
	nowDenied   = "now denied"
	maxExamples = 3
)

// testReport is what `host test --json` prints.
type testReport struct {
	OK     bool         `json:"ok"`
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	Cases  []caseResult `json:"cases"`
}

// caseResult is one case of a test file.
type caseResult struct {
	File      string  `json:"file"`
	Line      int     `json:"line"`
	Name      string  `json:"name"`
	Pass      bool    `json:"pass"`
	Mode      string  `json:"mode"`
	Expect    string  `json:"expect"`
	Got       string  `json:"got"`
	DecidedBy string  `json:"decided_by,omitempty"`
	Rule      string  `json:"rule,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	Failure   string  `json:"failure,omitempty"`
	Seconds   float64 `json:"seconds"`
}

// junitSuites is what `host test --junit` writes.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}
