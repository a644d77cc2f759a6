package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hotMeta is the _meta a 2026-07-28 client puts in each request.
const hotMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// hotMetaElicit is hotMeta from a client that can answer a form.
const hotMetaElicit = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`

// rawPost is one POST of body as a 2026-07-28 client sends it, with the
// headers given (name: value, "name:" to drop one).
func rawPost(t testing.TB, client *http.Client, endpoint, body string, headers ...string) (status int, header http.Header, answer string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	var msg struct {
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(body), &msg) == nil && msg.Params.Name != "" {
		req.Header.Set("Mcp-Name", msg.Params.Name)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, strings.TrimSpace(v))
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// statePerCall is what differs between two answers of the same call beyond
// perCall: a sealed requestState.
var statePerCall = regexp.MustCompile(`"requestState":"[^"]*"`)

// TestHotHTTPAnswersAsTheSDK: every tools/call POST of the sessionless
// protocol answered by the HTTP hot path gets what the SDK's stateless
// handler answers to the same request (status, the headers it sets, the
// body; the call's id, receipt and sealed state aside): results, denials,
// an Ask as an input-required result, unknown tools, bad arguments, odd
// ids, _meta; and requests the hot path leaves to the SDK are answered as
// before.
func TestHotHTTPAnswersAsTheSDK(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	if err := f.srv.UseStateKeys(stateKey(t)); err != nil {
		t.Fatal(err)
	}
	hot := httptest.NewServer(f.srv.Handler())
	t.Cleanup(hot.Close)
	sdk := httptest.NewServer(f.srv.HandlerSDK())
	t.Cleanup(sdk.Close)
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
	}
	type req struct {
		body    string
		headers []string
		hot     bool // the hot path serves it
	}
	cases := []req{
		{body: call(`2`, hotMeta+`,"name":"echo","arguments":{"text":"hello"}`), hot: true},
		{body: call(`"s-3"`, hotMeta+`,"name":"echo","arguments":{"text":"<b>&amp;</b> \u2028 ü 😀 \"q\" \\"}`), hot: true},
		{body: call(`4`, `"name":"add","arguments":{"a":1.5,"b":2},`+hotMeta), hot: true},
		{body: call(`5`, hotMeta+`,"name":"secret"`), hot: true},
		{body: call(`6`, hotMeta+`,"name":"delete","arguments":{"text":"x"}`), hot: true},
		{body: call(`7`, hotMetaElicit+`,"name":"delete","arguments":{"text":"x"}`), hot: true},
		{body: call(`8`, hotMeta+`,"name":"no_such_tool","arguments":{}`), hot: true},
		{body: call(`9`, hotMeta+`,"name":"echo","arguments":{"text":5}`), hot: true},
		{body: call(`10`, hotMeta+`,"name":"echo","arguments":null`), hot: true},
		{body: call(`11`, hotMeta+`,"name":"echo"`), hot: true},
		{body: call(`-13`, hotMeta+`,"name":"echo","arguments":{"text":"negative"}`), hot: true},
		{body: `{"id":14,"params":{"arguments":{"text":"order"},"name":"echo",` + hotMeta + `},"method":"tools/call","jsonrpc":"2.0"}`, hot: true},
		{body: call(`15`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"name":"echo","arguments":{"text":"m"}`), hot: true},
		// Left to the SDK:
		{body: call(`1e30`, hotMeta+`,"name":"echo","arguments":{"text":"odd id"}`)},
		{body: call(`12.5`, hotMeta+`,"name":"echo","arguments":{"text":"odd id"}`)},
		{body: "  " + call(`16`, hotMeta+`,"name":"echo","arguments":{"text":"space before"}`)},
		{body: call(`17`, hotMeta+`,"name":"echo","arguments":{"text":"x"}`), headers: []string{"Mcp-Name: add"}},
		{body: call(`18`, hotMeta+`,"name":"echo","arguments":{"text":"x"}`), headers: []string{"Mcp-Name:"}},
		{body: call(`19`, hotMeta+`,"name":"echo","arguments":{"text":"x"}`), headers: []string{"Mcp-Method:"}},
		{body: call(`20`, hotMeta+`,"name":"echo","arguments":{"text":"x"}`), headers: []string{"Accept: application/json"}},
		{body: call(`21`, hotMeta+`,"name":"echo","arguments":{"text":"x"}`), headers: []string{"Content-Type: text/plain"}},
		{body: call(`22`, hotMeta+`,"name":"echo","arguments":{"text":"x"}`), headers: []string{"Mcp-Param-Text: x"}},
		{body: call(`23`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{"text":"no capabilities"}`)},
		{body: call(`24`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":5},"name":"echo","arguments":{"text":"x"}`)},
		{body: call(`25`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"me"},"name":"echo","arguments":{"text":"x"}`)},
		{body: call(`26`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"x"}`)},
		{body: call(`27`, `"name":"echo","arguments":{"text":"no meta"}`)},
		{body: call(`28`, hotMeta+`,"name":"echo","arguments":{"text":"x"},"requestState":"nope"`)},
		{body: call(`29`, `"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"x"}`)},
		{body: call(`30`, hotMeta+`,"NAME":"echo","arguments":{"text":"case"}`)},
		{body: `[` + call(`31`, hotMeta+`,"name":"echo","arguments":{"text":"batch"}`) + `]`},
		{body: `{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{` + hotMeta + `,"name":"echo","arguments":{"text":"x"}}`},
	}
	want := int64(0)
	for _, c := range cases {
		if c.hot {
			want++
		}
	}
	before := f.srv.HotCalls()
	for _, c := range cases {
		wStatus, wHeader, wBody := rawPost(t, sdk.Client(), sdk.URL+"/mcp", c.body, c.headers...)
		gStatus, gHeader, gBody := rawPost(t, hot.Client(), hot.URL+"/mcp", c.body, c.headers...)
		norm := func(s string) string { return statePerCall.ReplaceAllString(perCall.ReplaceAllString(s, `-`), `-`) }
		if gStatus != wStatus || norm(gBody) != norm(wBody) {
			t.Errorf("%s\n hot path: %d %s\n      SDK: %d %s", c.body, gStatus, gBody, wStatus, wBody)
		}
		for _, h := range []string{"Content-Type", "Cache-Control", "Connection", "Mcp-Session-Id"} {
			if gHeader.Get(h) != wHeader.Get(h) {
				t.Errorf("%s\n %s: hot path %q, SDK %q", c.body, h, gHeader.Get(h), wHeader.Get(h))
			}
		}
	}
	if got := f.srv.HotCalls() - before; got != want {
		t.Errorf("the hot path served %d calls, want %d", got, want)
	}
}
