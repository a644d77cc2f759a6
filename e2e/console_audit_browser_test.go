package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// auditScreenshot, when set, is where TestConsoleAuditInABrowser saves its
// picture of the filtered audit page (docs/images/audit.png is one).
var auditScreenshot = flag.String("audit-screenshot", "", "save the console's filtered audit page as this PNG")

// consoleClientEnv makes the test binary GET the console page at the URL
// it holds and print where it ended (after redirects) and the page, so
// that a test can open the console as another user.
const consoleClientEnv = "PLUGKIT_TEST_CONSOLE_CLIENT"

func runAsConsoleClient() {
	u := os.Getenv(consoleClientEnv)
	if u == "" {
		return
	}
	resp, err := http.Get(u)
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	fmt.Printf("%s\n%s", resp.Request.URL, b)
	os.Exit(0)
}

// TestConsoleAuditInABrowser: the host's own user opens the console in a
// real browser without any key (the loopback lineage check lets it in),
// sees the audit lines of the calls made, and filters them by tool,
// principal and outcome; the credential a call carried is hidden. Another
// local user (nobody) gets the sign-in form.
func TestConsoleAuditInABrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := freePort(t)
	h := startApprovalsHost(t, "\nconsole {\n  listen    = \""+addr+"\"\n  audit_log = \"run/audit/audit.log\"\n}\n")
	base := "http://" + addr
	cs := h.agent(t, ctx, nil)

	// Calls to audit: one that runs, one safety denies, one routed and
	// denied by its approver; and one of this user's own.
	if r := mcpCall(t, ctx, cs, "read_file", `{"path":"notes.md"}`); r.IsError {
		t.Fatalf("read_file: %s", toolText(r))
	}
	if r := mcpCall(t, ctx, cs, "read_file", `{"path":"../outside.txt"}`); !r.IsError {
		t.Fatal("read_file outside the sandbox ran")
	}
	done := mcpCallAsync(ctx, cs, "delete_file", `{"path":"todo.md"}`)
	req := h.pending(t, "delete_file")
	if _, stderr, code := cli(t, "approvals", "deny", req.ID, "--reason", "not now", "-c", h.config); code != 0 {
		t.Fatalf("deny: exit %d %s", code, stderr)
	}
	<-done
	if _, stderr, code := cli(t, "call", "-c", h.config, "list_dir", `{"path":"."}`); code != 0 {
		t.Fatalf("host call list_dir: exit %d %s", code, stderr)
	}
	waitAuditLines(t, filepath.Join(h.dir, "run", "audit", "audit.log"), 4)

	b := browser(t, ctx)
	if err := chromedp.Do(b,
		chromedp.Navigate(base+"/audit"), // no key: the host's own user
		chromedp.WaitVisible(chromedp.CSS(`article.line`)),
	); err != nil {
		t.Fatalf("browser: %v\n%s", err, h.run.stderr)
	}
	page, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(`body`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{h.me, "Audit", "read_file", "delete_file", "list_dir", "agent:ci-bot", "DENIED", "route oncall"} {
		if !strings.Contains(page, want) {
			t.Errorf("the audit page does not show %q:\n%s", want, page)
		}
	}
	// Filter: delete_file by agent:ci-bot that was DENIED.
	if err := chromedp.Do(b,
		chromedp.SendKeys(chromedp.CSS(`#tool`), "delete_file"),
		chromedp.SendKeys(chromedp.CSS(`#principal`), "agent:ci-bot"),
		chromedp.SetValue(chromedp.CSS(`#outcome`), "DENIED"),
		chromedp.Click(chromedp.CSS(`form.filter button`)),
		chromedp.WaitVisible(chromedp.CSS(`#tool[value="delete_file"]`)),
	); err != nil {
		t.Fatalf("filter in the browser: %v", err)
	}
	if page, err = chromedp.Run(b, chromedp.Text(chromedp.CSS(`main`))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "delete_file") || !strings.Contains(page, "route oncall") || strings.Contains(page, "read_file") || strings.Contains(page, "list_dir") {
		t.Errorf("filtered by tool, principal and outcome, the page shows:\n%s", page)
	}
	png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if *auditScreenshot != "" {
		if err := os.WriteFile(*auditScreenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Another local user is not the host's: the sign-in form.
	otherUserGetsSignIn(t, ctx, base, "delete_file")
}
