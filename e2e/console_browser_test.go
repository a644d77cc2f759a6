package e2e

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshot, when set, is where TestConsoleApprovesInABrowser saves its
// picture of the approvals page (docs/images/approvals.png is one).
var screenshot = flag.String("screenshot", "", "save the console's approvals page as this PNG")

// browser starts Debian's chromium headless (no sandbox: CI runs as root)
// and returns a context that drives a tab of it.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the console's browser test needs chromium (Debian: apt-get install chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(420, 900)) // a phone's width: the page must read there
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return bctx
}

// TestConsoleApprovesInABrowser: a real browser signs in to the console
// with an API key (user:ann's), sees the approval request an MCP agent's call made,
// approves it, and the agent gets its result.
func TestConsoleApprovesInABrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := freePort(t)
	h := startApprovalsHost(t, "\nconsole {\n  listen = \""+addr+"\"\n}\n")
	base := "http://" + addr
	cs := h.agent(t, ctx, nil)
	done := mcpCallAsync(ctx, cs, "delete_file", `{"path":"todo.md"}`)
	req := h.pending(t, "delete_file")

	b := browser(t, ctx)
	err := chromedp.Do(b,
		// The browser runs as the host's user, whom the console lets in
		// without a key: sign in as ann on the form itself.
		chromedp.Navigate(base+"/signin"),
		chromedp.WaitVisible(chromedp.CSS(`#credential`)),
		chromedp.SendKeys(chromedp.CSS(`#credential`), h.annKey),
		chromedp.Submit(chromedp.CSS(`#credential`)),
		chromedp.WaitVisible(chromedp.CSS(`article.request`)),
	)
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, h.run.stderr)
	}
	page, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(`main`)))
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"delete_file", "agent:ci-bot", "oncall", "0 of 1", req.ID, `"path":"todo.md"`, "user:ann"} {
		if !strings.Contains(page, want) {
			t.Errorf("the approvals page does not show %q:\n%s", want, page)
		}
	}
	if *screenshot != "" {
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(b,
		chromedp.SendKeys(chromedp.CSS(`input[name=reason]`), "checked with the owner"),
		chromedp.Click(chromedp.CSS(`button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`p.empty`)),
	); err != nil {
		t.Fatalf("approve in the browser: %v", err)
	}
	if page, err = chromedp.Run(b, chromedp.Text(chromedp.CSS(`main`))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "approved by user:ann") {
		t.Errorf("after approving, the page says:\n%s", page)
	}
	if r := <-done; r.IsError {
		t.Fatalf("the agent's call after the console's approval: %s", toolText(r))
	}
}

// TestConsoleRefusesFormsWithoutCSRF: a signed-in session's form posted
// without its CSRF token is refused, and so is the sign-in form; every
// page carries the strict Content-Security-Policy.
func TestConsoleRefusesFormsWithoutCSRF(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := freePort(t)
	h := startApprovalsHost(t, "\nconsole {\n  listen = \""+addr+"\"\n}\n")
	base := "http://" + addr
	cs := h.agent(t, ctx, nil)
	done := mcpCallAsync(ctx, cs, "delete_file", `{"path":"todo.md"}`)
	req := h.pending(t, "delete_file")

	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Jar: jar, Transport: tr}
	get := func(path string) string {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post := func(path string, form url.Values) int {
		resp, err := c.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	if code := post("/signin", url.Values{"credential": {h.annKey}}); code != http.StatusForbidden {
		t.Errorf("sign-in without its CSRF token: %d, want 403", code)
	}
	m := csrf.FindStringSubmatch(get("/signin"))
	if m == nil {
		t.Fatal("the sign-in form has no CSRF token")
	}
	if code := post("/signin", url.Values{"credential": {h.annKey}, "csrf": {m[1]}}); code != http.StatusOK {
		t.Fatalf("sign-in: %d", code)
	}
	page := get("/approvals")
	if !strings.Contains(page, req.ID) {
		t.Fatalf("signed in, the approvals page does not list %s:\n%s", req.ID, page)
	}
	for _, form := range []url.Values{{"args_sha256": {req.ArgsSHA256}}, {"args_sha256": {req.ArgsSHA256}, "csrf": {"forged"}}} {
		if code := post("/approvals/"+req.ID+"/approve", form); code != http.StatusForbidden {
			t.Errorf("approve posted with csrf %q: %d, want 403", form.Get("csrf"), code)
		}
	}
	if got, _ := h.requestState(t, req.ID); got != "pending" {
		t.Fatalf("a refused form changed the request: %s", got)
	}
	// With the token, the same session's deny counts.
	tok := csrf.FindStringSubmatch(page)[1]
	if code := post("/approvals/"+req.ID+"/deny", url.Values{"csrf": {tok}, "reason": {"not today"}}); code != http.StatusOK {
		t.Errorf("deny with the token: %d", code)
	}
	if r := <-done; !r.IsError || !strings.Contains(toolText(r), "denied by user:ann: not today") {
		t.Errorf("denied in the console: %s", toolText(r))
	}
}
