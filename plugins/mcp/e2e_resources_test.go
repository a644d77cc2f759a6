package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// Resources and prompts of bridged servers, governed like tools: the real
// npm server-everything and the hostile server (a resource carrying a fake
// credential, a prompt whose text changes) behind the bridge, through host
// mcp with the Go SDK's client.

// offeringsDeployment writes a deployment with a safety plugin (rules and
// secrets block given), the blocks given, and an audit that records
// arguments (so that each read's line names its URI).
func offeringsDeployment(t *testing.T, dir, safety, blocks string) string {
	t.Helper()
	hcl := fmt.Sprintf(`
host {
  admin_socket     = "run/host.sock"
  approval_timeout = "5s"
}
plugin "safety" {
  path     = %q
  critical = true
  config {
%s
  }
}
%s
plugin "audit" {
  path = %q
  config {
    path             = "run/audit.log"
    record_arguments = true
  }
}
`, bin("plugins/safety"), safety, blocks, bin("plugins/audit"))
	path := filepath.Join(dir, "deployment.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// auditArgs are the audit lines of tool, with their recorded arguments.
func auditArgs(t testing.TB, dir, tool string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "run", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Tool == tool {
			out = append(out, string(l.Arguments))
		}
	}
	return out
}

func TestResourcesAndPromptsOverMCP(t *testing.T) {
	needBinaries(t)
	everything := npmServer(t, "mcp-server-everything")
	noLeaks(t)
	dir := t.TempDir()
	config := offeringsDeployment(t, dir, `
    deny "no-static-docs" {
      resources = ["demo://resource/static/document/*"]
      reason    = "documents stay inside"
    }
    secrets {
      results = "redact"
    }`, fmt.Sprintf(`
plugin "everything" {
  path = %q
  config {
    command = [%q]
    prefix  = "ev"
  }
}
plugin "hostile" {
  path = %q
  config {
    command = [%q, "-resources"]
  }
}
`, bin("plugins/mcp"), everything, bin("plugins/mcp"), bin("hostile-mcp")))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(bin("host"), "mcp", "-c", config)
	hostLog := &testkit.Buffer{}
	cmd.Stderr = hostLog
	updated := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, hostLog)
	}
	defer cs.Close()

	const (
		notes   = "plugkit://hostile/hostile://notes"
		creds   = "plugkit://hostile/hostile://creds"
		staticP = "plugkit://everything/demo://resource/static/document/"
	)
	t.Run("resources/list: both servers', URIs mapped, a private cache hint", func(t *testing.T) {
		var uris []string
		waitFor(t, 60*time.Second, "both servers' resources", func() bool {
			res, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			uris = uris[:0]
			static := false
			for _, r := range res.Resources {
				uris = append(uris, r.URI)
				static = static || strings.HasPrefix(r.URI, staticP)
			}
			if static && slices.Contains(uris, notes) {
				if res.CacheScope != "private" || res.TTLMs <= 0 {
					t.Errorf("resources/list cache hint: scope %q ttl %d ms, want private and a TTL", res.CacheScope, res.TTLMs)
				}
				return true
			}
			return false
		}, hostLog.String)
		for _, u := range uris {
			if !strings.HasPrefix(u, "plugkit://everything/demo://") && !strings.HasPrefix(u, "plugkit://hostile/hostile://") {
				t.Errorf("resource URI %q is not mapped to its server", u)
			}
		}
	})
	t.Run("resources/templates/list", func(t *testing.T) {
		res, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rt := range res.ResourceTemplates {
			got = append(got, rt.URITemplate)
		}
		for _, want := range []string{"plugkit://everything/demo://resource/dynamic/text/{resourceId}", "plugkit://hostile/hostile://item/{id}"} {
			if !slices.Contains(got, want) {
				t.Errorf("templates %v, want %s among them", got, want)
			}
		}
	})
	read := func(t *testing.T, uri string) (string, error) {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri {
			raw, _ := json.Marshal(res)
			t.Fatalf("read %s: %s, want one content under the same URI", uri, raw)
		}
		if res.CacheScope != "private" || res.TTLMs != 0 {
			t.Errorf("read %s: cache hint scope %q ttl %d, want private and no caching", uri, res.CacheScope, res.TTLMs)
		}
		return res.Contents[0].Text, nil
	}
	t.Run("resources/read, a template expanded", func(t *testing.T) {
		if text, err := read(t, notes); err != nil || text != "buy milk" {
			t.Errorf("read notes: %q %v", text, err)
		}
		if text, err := read(t, "plugkit://hostile/hostile://item/7"); err != nil || text != "item 7" {
			t.Errorf("read item 7: %q %v", text, err)
		}
		if text, err := read(t, "plugkit://everything/demo://resource/dynamic/text/1"); err != nil || !strings.Contains(text, "1") {
			t.Errorf("read dynamic text 1: %q %v", text, err)
		}
	})
	t.Run("a rule denies a URI pattern, naming the rule", func(t *testing.T) {
		_, err := read(t, staticP+"architecture.md")
		if err == nil || !strings.Contains(err.Error(), "DENIED") || !strings.Contains(err.Error(), `"no-static-docs"`) {
			t.Fatalf("read of a denied URI: %v, want DENIED naming the rule", err)
		}
	})
	t.Run("a credential in a resource comes back redacted", func(t *testing.T) {
		text, err := read(t, creds)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, "ghp_") || !strings.Contains(text, "deploy token:") {
			t.Errorf("read creds: %q, want the token redacted", text)
		}
	})
	t.Run("an unknown URI", func(t *testing.T) {
		if _, err := read(t, "plugkit://nobody/x://y"); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("read of an unknown server's URI: %v", err)
		}
	})
	waitUpdate := func(t *testing.T, uri string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-updated:
				if got == uri {
					return
				}
			case <-deadline:
				t.Fatalf("no notifications/resources/updated for %s\n%s", uri, hostLog)
			}
		}
	}
	t.Run("subscribe and receive an update", func(t *testing.T) {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: notes}); err != nil {
			t.Fatal(err)
		}
		waitUpdate(t, notes) // the hostile server sends one after a subscription
		// server-everything sends updates of what its client subscribed
		// to while its toggle-subscriber-updates tool has them on.
		const dyn = "plugkit://everything/demo://resource/dynamic/text/2"
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: dyn}); err != nil {
			t.Fatal(err)
		}
		toggle := func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev_toggle-subscriber-updates", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("ev_toggle-subscriber-updates: %v %+v", err, res)
			}
		}
		toggle()
		waitUpdate(t, dyn)
		toggle()
		// A rule that denies reading a URI denies following it. A
		// 2026-07-28 client subscribes on a subscriptions/listen stream of
		// its own, whose refusal the Go SDK's Subscribe does not wait for:
		// the audit shows it.
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: staticP + "architecture.md"}); err != nil && !strings.Contains(err.Error(), `"no-static-docs"`) {
			t.Errorf("subscribe to a denied URI: %v, want DENIED naming the rule", err)
		}
		waitFor(t, 30*time.Second, "the denied subscription's audit line", func() bool {
			for _, l := range audit(t, dir) {
				if l.Tool == "ev_resources.subscribe" && l.Code == "DENIED" {
					return true
				}
			}
			return false
		}, hostLog.String)
	})
	t.Run("prompts/list and prompts/get", func(t *testing.T) {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var args *mcp.Prompt
		var names []string
		for _, p := range res.Prompts {
			names = append(names, p.Name)
			if p.Name == "ev_prompts.args-prompt" {
				args = p
			}
		}
		if args == nil || !slices.Contains(names, "ev_prompts.simple-prompt") {
			t.Fatalf("prompts %v, want ev_prompts.simple-prompt and ev_prompts.args-prompt", names)
		}
		if len(args.Arguments) != 2 || args.Arguments[0].Name != "city" || !args.Arguments[0].Required || args.Arguments[1].Required {
			raw, _ := json.Marshal(args)
			t.Errorf("args-prompt: %s, want city (required) and state", raw)
		}
		if res.CacheScope != "private" || res.TTLMs <= 0 {
			t.Errorf("prompts/list cache hint: scope %q ttl %d", res.CacheScope, res.TTLMs)
		}
		got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev_prompts.args-prompt", Arguments: map[string]string{"city": "Paris"}})
		if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "What's weather in Paris?" {
			t.Fatalf("get args-prompt: %v %+v", err, got)
		}
		got, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev_prompts.simple-prompt"})
		if err != nil || len(got.Messages) != 1 || !strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, "simple prompt") {
			t.Fatalf("get simple-prompt: %v %+v", err, got)
		}
		// Stage 0 checks a prompt's arguments as a tool's.
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev_prompts.args-prompt"}); err == nil || !strings.Contains(err.Error(), "INVALID_ARGUMENTS") {
			t.Errorf("get args-prompt without its required argument: %v, want INVALID_ARGUMENTS", err)
		}
	})
	t.Run("no entry is served as a tool", func(t *testing.T) {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if strings.Contains(tool.Name, "resources.") || strings.Contains(tool.Name, "prompts.") {
				t.Errorf("tools/list serves %s", tool.Name)
			}
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostile_resources.read", Arguments: map[string]any{"uri": "hostile://notes"}}); err == nil || !strings.Contains(err.Error(), "not a tool") {
			t.Errorf("tools/call of the reader: %v, want refused as not a tool", err)
		}
	})
	t.Run("each read and get is an audit line naming its URI", func(t *testing.T) {
		// notes, item/7 and creds; the dynamic text and the denied
		// document; the unknown URI named no server, so no call.
		waitFor(t, 30*time.Second, "the audit lines of the reads", func() bool {
			return len(auditArgs(t, dir, "hostile_resources.read")) == 3 &&
				len(auditArgs(t, dir, "ev_resources.read")) == 2 &&
				len(auditArgs(t, dir, "ev_prompts.args-prompt")) == 2 && len(auditArgs(t, dir, "ev_prompts.simple-prompt")) == 1
		}, func() string { b, _ := os.ReadFile(filepath.Join(dir, "run", "audit.log")); return string(b) })
		reads := strings.Join(auditArgs(t, dir, "ev_resources.read"), "\n")
		if !strings.Contains(reads, `demo://resource/static/document/architecture.md`) || !strings.Contains(reads, `demo://resource/dynamic/text/1`) {
			t.Errorf("the audit lines of ev_resources.read do not name their URIs:\n%s", reads)
		}
	})
}

// A prompt is pinned by host lock like a tool; when its text changes (the
// server redefines it, seen at the next start) it is held absent with the
// reason, and host lock accepts it again.
func TestPinnedPromptRugPull(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	pulled := filepath.Join(dir, "pulled")
	config := deployment(t, dir, hostileBlock("pr", "", "-prompt-text", pulled))
	h := startHost(t, config, 2)
	const name = "pr_prompts.greet"
	waitFor(t, 30*time.Second, name+" registered", func() bool {
		e, ok := h.entries(t, "pr")[name]
		return ok && e.Kind == "prompt" && e.Held == ""
	}, h.log.String)
	if r := h.call(t, name, `{}`); !r.OK || !strings.Contains(string(r.Value), "Greet the user politely.") {
		t.Fatalf("%s: %+v", name, r)
	}
	out, stderr, code := cli(t, "lock", "-c", config)
	if code != 0 || !strings.Contains(out, "+ prompt:greet") {
		t.Fatalf("lock: exit %d\n%s%s", code, out, stderr)
	}
	h.waitActive(t, 2)

	// The server's prompt text changes; the bridge sees it when it starts
	// again.
	if err := os.WriteFile(pulled, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := cli(t, "reload", "pr", "-c", config); code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, stderr)
	}
	const why = "definition changed since locked: messages"
	waitFor(t, 30*time.Second, name+" held", func() bool {
		return strings.Contains(h.entries(t, "pr")[name].Held, why)
	}, h.log.String)
	if e := h.entries(t, "pr")[name]; !hasNote(e, "instruction-tags") {
		t.Errorf("the changed prompt's text is not flagged: %+v", e.Notes)
	}
	r := h.call(t, name, `{}`)
	if r.OK || r.code() != "UNKNOWN_TOOL" || !strings.Contains(r.message(), why) {
		t.Fatalf("%s after its text changed: %+v, want UNKNOWN_TOOL naming %q", name, r, why)
	}
	// Over MCP: not listed, and a get says why.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin("host"), "mcp", "-c", config)
	hostLog := &testkit.Buffer{}
	cmd.Stderr = hostLog
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, hostLog)
	}
	waitFor(t, 30*time.Second, "host mcp's plugins", func() bool {
		res, err := cs.ListTools(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "pr_echo" })
	}, hostLog.String)
	if res, err := cs.ListPrompts(ctx, nil); err != nil || slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == name }) {
		t.Errorf("prompts/list: %v %+v, want %s left out", err, res, name)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name}); err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("prompts/get %s: %v, want it held naming %q", name, err, why)
	}
	cs.Close()

	out, stderr, code = cli(t, "lock", "pr", "-c", config)
	if code != 0 || !strings.Contains(out, "~ prompt:greet: messages changed") {
		t.Fatalf("lock pr: exit %d\n%s%s", code, out, stderr)
	}
	h.waitActive(t, 2)
	waitFor(t, 30*time.Second, name+" served again", func() bool {
		e, ok := h.entries(t, "pr")[name]
		return ok && e.Held == ""
	}, h.log.String)
}

// The TypeScript SDK's client (1.32) lists and reads resources and gets a
// prompt of server-everything through host mcp.
func TestResourcesAndPromptsTypeScriptClient(t *testing.T) {
	needBinaries(t)
	everything := npmServer(t, "mcp-server-everything")
	node := testenv.LookPath(t, "node")
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "everything" {
  path = %q
  config {
    command = [%q]
    prefix  = "ev"
  }
}
`, bin("plugins/mcp"), everything))
	script, err := filepath.Abs(filepath.Join("testdata", "servers", "ts-resources.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const uri = "plugkit://everything/demo://resource/dynamic/text/3"
	var stderr testkit.Buffer
	cmd := exec.CommandContext(ctx, node, script, bin("host"), config, uri, "ev_prompts.args-prompt", `{"city":"Lyon"}`)
	cmd.Dir = dir
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ts-resources.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Resources, Templates, Prompts []string
		Read                          mcp.ReadResourceResult
		Prompt                        struct {
			Messages []struct {
				Content struct{ Text string }
			}
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if !slices.ContainsFunc(got.Resources, func(u string) bool { return strings.HasPrefix(u, "plugkit://everything/demo://resource/static/") }) {
		t.Errorf("resources %v", got.Resources)
	}
	if !slices.Contains(got.Templates, "plugkit://everything/demo://resource/dynamic/text/{resourceId}") {
		t.Errorf("templates %v", got.Templates)
	}
	if !slices.Contains(got.Prompts, "ev_prompts.simple-prompt") {
		t.Errorf("prompts %v", got.Prompts)
	}
	if len(got.Read.Contents) != 1 || got.Read.Contents[0].URI != uri || !strings.Contains(got.Read.Contents[0].Text, "3") {
		t.Errorf("read %s: %s", uri, out)
	}
	if len(got.Prompt.Messages) != 1 || got.Prompt.Messages[0].Content.Text != "What's weather in Lyon?" {
		t.Errorf("prompt: %s", out)
	}
}
