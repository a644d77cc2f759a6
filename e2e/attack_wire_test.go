package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// mcpHost starts the shipped deployment serving MCP on a loopback port
// and returns the endpoint and the deployment file.
func mcpHost(t *testing.T) (endpoint, config string) {
	t.Helper()
	dir := t.TempDir()
	config = deploymentFile(t, dir)
	addr := freeLoopbackAddr(t)
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	withMCP := strings.Replace(string(data), "host {\n", "host {\n  mcp = \""+addr+"\"\n", 1)
	if err := os.WriteFile(config, []byte(withMCP), 0o644); err != nil {
		t.Fatal(err)
	}
	startHost(t, config, len(shippedPlugins))
	return "http://" + addr + "/mcp", config
}

// rawMCP posts one JSON-RPC message with bare HTTP, as a hostile client
// would, and returns the status, the session id the server gave, and the
// answer's JSON-RPC message (an SSE event's data, or the JSON body).
func rawMCP(t *testing.T, endpoint, session, origin, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", endpoint, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	msg := string(b)
	if i := strings.Index(msg, "data: "); i >= 0 {
		msg = msg[i+len("data: "):]
		if j := strings.Index(msg, "\n"); j >= 0 {
			msg = msg[:j]
		}
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), strings.TrimSpace(msg)
}

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`

func rawSession(t *testing.T, endpoint string) string {
	t.Helper()
	code, session, msg := rawMCP(t, endpoint, "", "", rawInitialize)
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s", code, msg)
	}
	rawMCP(t, endpoint, session, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return session
}

// TestAttackWireMCP: the hostile HTTP client's three findings on the
// loopback MCP port. A request with a foreign Origin is refused 403 (one
// with a loopback origin, or none, is served); a ping with id 1e30 is
// answered with id 1e30 (it came back as -9223372036854775808); and a
// read_file naming "path" twice, once inside the workspace and once
// outside, is refused INVALID_ARGUMENTS naming the key, over MCP and on
// the admin socket (before, the last value won: safety and the tool could
// read different paths).
func TestAttackWireMCP(t *testing.T) {
	needShippedDeployment(t)
	endpoint, config := mcpHost(t)

	if code, _, msg := rawMCP(t, endpoint, "", "https://evil.example", rawInitialize); code != http.StatusForbidden {
		t.Errorf("initialize with Origin https://evil.example: %d %.200s; want 403", code, msg)
	} else {
		t.Logf("foreign origin: %d %s", code, msg)
	}
	if code, _, msg := rawMCP(t, endpoint, "", "http://localhost:5173", rawInitialize); code != http.StatusOK {
		t.Errorf("initialize with a loopback Origin: %d %.200s; want it served", code, msg)
	}

	session := rawSession(t, endpoint)
	code, _, msg := rawMCP(t, endpoint, session, "", `{"jsonrpc":"2.0","id":1e30,"method":"ping"}`)
	var ping struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(msg), &ping); code != http.StatusOK || err != nil || string(ping.ID) != "1e30" {
		t.Errorf("ping with id 1e30: %d %s; want the id back as 1e30", code, msg)
	}

	dup := `{"path":"notes.md","path":"/etc/passwd"}`
	code, _, msg = rawMCP(t, endpoint, session, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":`+dup+`}}`)
	var call struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(msg), &call); code != http.StatusOK || err != nil || !call.Result.IsError ||
		len(call.Result.Content) == 0 || !strings.Contains(call.Result.Content[0].Text, `duplicate key "path"`) {
		t.Errorf("tools/call read_file %s over MCP: %d %s; want an error naming duplicate key \"path\"", dup, code, msg)
	} else {
		t.Logf("over MCP: %s", call.Result.Content[0].Text)
	}
	r, _ := callJSON(t, config, "read_file", dup)
	if r.OK || r.Error == nil || r.Error.Code != "INVALID_ARGUMENTS" || !strings.Contains(r.Error.Message, `duplicate key "path"`) {
		t.Errorf("host call read_file %s: %+v; want INVALID_ARGUMENTS duplicate key \"path\"", dup, r)
	}
}
