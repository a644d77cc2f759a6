package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// A bridged server's notifications/resources/list_changed and
// prompts/list_changed reach the clients of the gateway, through the real
// binaries: the server adds a resource and a prompt while it runs, and a
// client told of each change finds the new one when it lists again.
func TestResourceAndPromptListChanged(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, hostileBlock("pr", "", "-resources", "-prompt-text", filepath.Join(dir, "never"), "-grow"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resourcesChanged := make(chan struct{}, 64)
	promptsChanged := make(chan struct{}, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resourcesChanged <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { promptsChanged <- struct{}{} },
	})
	cmd := exec.Command(bin("host"), "mcp", "-c", config)
	hostLog := &testkit.Buffer{}
	cmd.Stderr = hostLog
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, hostLog)
	}
	defer cs.Close()
	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.ListChanged {
		t.Errorf("the gateway does not declare resources listChanged: %+v", caps.Resources)
	}
	waitFor(t, 30*time.Second, "the bridge's tools", func() bool {
		res, err := cs.ListTools(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "pr_grow" })
	}, hostLog.String)

	const grownURI, grownPrompt = "plugkit://pr/hostile://grown", "pr_prompts.grown"
	hasResource := func() bool {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		return slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == grownURI })
	}
	hasPrompt := func() bool {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		return slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == grownPrompt })
	}
	if hasResource() || hasPrompt() {
		t.Fatal("the resource or the prompt is there before the server adds it")
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pr_grow", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("pr_grow: %v %+v", err, res)
	}
	// A notice sent before the server grew (while the plugins started)
	// lists without the new one; the wait ends at a notice after which the
	// list has it.
	told := func(what string, notices chan struct{}, has func() bool) {
		t.Helper()
		for {
			select {
			case <-notices:
				if has() {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s list_changed after which the list has the new one\nhost log:\n%s", what, hostLog)
			}
		}
	}
	told("resources", resourcesChanged, hasResource)
	told("prompts", promptsChanged, hasPrompt)
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: grownURI})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "grown" {
		t.Errorf("read %s: %v %+v", grownURI, err, rr)
	}
}
