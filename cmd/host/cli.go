package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Version is the host's version.
const Version = host.Version

// Exit codes: 0 success, 1 a failure the command reports (a call that is not
// ok, an invalid file), 2 a usage or connection error; 5 a reload that left
// host settings for the next start (3 and 4 are explain's). Each has its
// row in exitCodes, which the help prints.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitRestart = 5
	defaultFile = "config.hcl"
)

// exitCodes is what each exit code means, as `host --help` says it (and
// README.md's table; a test holds both to the exit constants).
var exitCodes = []struct {
	code  int
	means string
}{
	{exitOK, "success: the command did what it was asked (a call's result is ok)"},
	{exitFailed, "a failure the command reports: a call that is not ok, an invalid file, a failing policy test"},
	{exitUsage, "a usage or connection error (no host running, a bad argument)"},
	{exitWouldDeny, "explain: the call would be denied"},
	{exitWouldAsk, "explain: the call would be asked about"},
	{exitRestart, "reload: done, but changed host settings take effect at the next start"},
	{exitReplayChanged, "replay: a recorded call's outcome changes in a direction --fail-on forbids"},
}

// exitCodesHelp is the help's paragraph on exit codes.
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", c.code, c.means)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// env is what every command gets: its streams and the global flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	config         string
	socket         string
	json           bool
	// toolsAs: `host tools --as` (toolsas.go).
	toolsAs toolsAs
	// answerFromStdin: `host call --answer-from-stdin`, questions are
	// answered from stdin even when it is not a terminal.
	answerFromStdin bool
	// in reads stdin's answers, one line each (elicit.go).
	in *bufio.Reader
}

// command is one row of the CLI: cobra's fields plus what it runs.
type command struct {
	use, short, long string
	args             cobra.PositionalArgs
	run              func(ctx context.Context, e *env, args []string) error
}

var commands = []command{
	{use: "run", short: "Start the deployment in the foreground", args: cobra.NoArgs, run: runHost,
		long: "Start every plugin of the deployment file, serve the admin socket, and stop\ncleanly on Ctrl-C or SIGTERM. Each plugin's state changes and its stderr are\nlogged under its name."},
	{use: "validate", short: "Check the deployment file and every plugin without starting it", args: cobra.NoArgs, run: validate,
		long: "Report every problem of the deployment file as file:line:col: message, including\neach plugin's config checked against the schema the plugin declares.\nExit 0 when the file is valid, 1 when it is not."},
	{use: "mcp", short: "Serve the deployment to an agent over MCP on stdio", args: cobra.NoArgs, run: serveMCP,
		long: "Start every plugin of the deployment file and serve its tools over the Model\nContext Protocol on stdin and stdout, for MCP clients that launch their tool\nservers. Every call passes the pipeline as caller mcp#N; a policy's question is\nput to the client's user (elicitation). Logs go to stderr. No admin socket is\nserved; for a host shared with the other commands, set mcp = \"127.0.0.1:PORT\"\nin the host block and use `host run`."},
	{use: "status", short: "Show each plugin of the running host", args: cobra.NoArgs, run: status},
	{use: "tools", short: "List the tools of the running host", args: cobra.NoArgs, run: tools,
		long: "List every tool of the running host: its owner, hints, parameters and\ndescription. With --as KIND:ID (and --attribute key:value for each of its\nattributes), or --as key:NAME for an API key, list only the tools shown to that\nprincipal: those its MCP\ntools/list holds, whose calls some rule could allow or ask about."},
	{use: "call TOOL [JSON]", short: "Call a tool through the pipeline", args: callArgs, run: call,
		long: "Call TOOL with JSON arguments (default {}) through the whole pipeline and print\nthe result. When a policy asks for approval and the terminal can answer, you are\nasked yes/no; otherwise the call is denied. When a bridged server asks its user\nsomething (a form or a URL), the terminal shows it and asks; otherwise it is\ndeclined. --answer-from-stdin answers from stdin even when it is no terminal.\nExit 0 when the result is ok, 1 when it is not, 2 on usage or connection errors."},
	{use: "reload [PLUGIN]", short: "Restart one plugin, or reload the deployment file", args: cobra.MaximumNArgs(1), run: reload,
		long: "Without PLUGIN, re-read the deployment file: added plugins start, removed ones\nstop, changed ones are reloaded. With PLUGIN, reload that one plugin.\nExit 0 when done, 1 when the file is invalid or a plugin did not start, 5 when\nthe host block changed: those settings are named and take effect at restart."},
	{use: "stop", short: "Stop the running host", args: cobra.NoArgs, run: stopHost},
	{use: "lock [PLUGIN]", short: "Pin every plugin's binary, and the tools of bridged servers", args: cobra.MaximumNArgs(1), run: lock,
		long: "Write sha256 = \"...\" into each plugin block of the deployment file, keeping its\ncomments and layout. A pinned binary is checked before every launch.\n\nWith the host running, also pin the definition of every tool a bridged MCP\nserver defines now (held ones included: this accepts them) as pins = {...} in\nthe plugin's config block, print what changed, and reload the plugins whose\npins changed. With PLUGIN, only that plugin's tool definitions are pinned."},
}

// run is the whole CLI, testable without a process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return finish(e, root.ExecuteContext(ctx))
}

// newRoot is the CLI's command tree: the root's help, its flags, and every
// command.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "host",
		Short: "Run plugkit tool plugins behind one permission pipeline",
		Long: "host runs the tool plugins of a deployment file as separate processes and puts\n" +
			"every tool call through one permission pipeline.\n\n" +
			"Start with `host run` in one terminal, then use the other commands in another.\n\n" +
			"The guides are in the docs/ folder of the source tree, one per topic (the\n" +
			"deployment file, MCP, bridged servers, sandboxing, writing plugins, observing,\n" +
			"limits); README.md lists them.\n\n" + exitCodesHelp(),
		Version:       fmt.Sprintf("%s (plugin protocol %d)", Version, wire.ProtocolVersion),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&e.config, "config", "c", defaultFile, "deployment file")
	root.PersistentFlags().StringVar(&e.socket, "socket", "", "admin socket of a running host (default: from the deployment file)")
	root.PersistentFlags().BoolVar(&e.json, "json", false, "print JSON")
	for _, c := range commands {
		root.AddCommand(&cobra.Command{
			Use: c.use, Short: c.short, Long: c.long, Args: c.args,
			RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd.Context(), e, args) },
		})
	}
	root.AddCommand(keyCommand(e), explainCommand(e), testCommand(e), replayCommand(e), tokensCommand(e), approvalsCommand(e))
	addToolsAsFlags(root, e)
	addCallFlags(root, e)
	return root
}

// finish turns what the command returned into its exit code, saying what
// went wrong on stderr (and stdout with --json).
func finish(e *env, err error) int {
	stdout, stderr := e.stdout, e.stderr
	if err == nil {
		return exitOK
	}
	code, msg, hint := exitUsage, err.Error(), ""
	var ee *exitError
	var ce *admin.ConnectError
	var pe *admin.PeerError
	switch {
	case errors.As(err, &ee):
		code, msg = ee.code, ee.err.Error()
	case errors.As(err, &ce) || errors.As(err, &pe):
	default:
		// Cobra's own errors (unknown command or flag, wrong number of
		// arguments).
		hint = "Run 'host --help' for usage."
	}
	if msg == "" {
		// The command printed its answer already (a call that is not ok).
		return code
	}
	fmt.Fprintln(stderr, "host:", shownText(msg)) // an error may take several lines
	if hint != "" {
		fmt.Fprintln(stderr, hint)
	}
	if e.json {
		// One JSON document on stdout, failure or not.
		_ = printJSON(stdout, jsonFailure{OK: false, Error: msg, ExitCode: code})
	}
	return code
}

// jsonFailure is what a --json command prints when it fails before it has
// an answer of its own to print.
type jsonFailure struct {
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// callArgs wants TOOL, and at most one JSON argument, saying so.
func callArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return fail(exitUsage, "call: which tool? usage: host call TOOL [JSON] (`host tools` lists them)")
	case len(args) > 2:
		return fail(exitUsage, "call: %d arguments after the tool; the arguments are one JSON object, quoted: host call %s '{\"key\":\"value\"}'", len(args)-1, args[0])
	}
	return nil
}

// socketPath is --socket, or the admin socket the deployment file names.
func (e *env) socketPath() (string, error) {
	if e.socket != "" {
		return e.socket, nil
	}
	if _, err := os.Stat(e.config); err != nil {
		return "", fail(exitUsage, "no --socket given and cannot read %s: %v", e.config, err)
	}
	d, diags := deployment.Parse(e.config)
	if diags.HasErrors() {
		// A broken file is when the operator most needs the host that
		// runs it: ask the host registry which one that is.
		if sock, pid, ok := runningHostFor(e.config); ok {
			fmt.Fprintf(e.stderr, "host: %s has errors (host validate shows them); using the admin socket of the host running it (pid %d)\n", e.config, pid)
			return sock, nil
		}
	}
	if d != nil && d.Host.AdminSocket != "" {
		return d.Host.AdminSocket, nil
	}
	def := filepath.Join(filepath.Dir(e.config), "plugkit.sock")
	if _, err := os.Stat(def); err != nil && diags.HasErrors() {
		// Not even the host block could be read (a file over the size or
		// nesting limits): guessing the default would only fail to connect.
		return "", fail(exitUsage, "cannot tell the admin socket from %s, which cannot be read: %s; pass --socket",
			e.config, strings.TrimSpace(deployment.Format(diags[:1])))
	}
	return def, nil
}

func (e *env) client() (*admin.Client, error) {
	path, err := e.socketPath()
	if err != nil {
		return nil, err
	}
	return admin.NewClient(path), nil
}
