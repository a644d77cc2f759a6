package testoauth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource is an upstream MCP server (streamable HTTP at URL) protected by
// an AuthServer: tools/call needs one of its access tokens issued for URL;
// with Strict, every request does. Without one it answers 401 with
// WWW-Authenticate naming its RFC 9728 metadata.
type Resource struct {
	URL         string // the MCP endpoint, and the resource tokens are issued for
	MetadataURL string
	as          *AuthServer

	mu    sync.Mutex
	calls []Call
}

// Call is one tools/call that reached the tool, and whose token it
// carried.
type Call struct {
	User, Token, Tool string
}

// StartResource serves until the test ends.
func StartResource(t testing.TB, as *AuthServer, strict bool) *Resource {
	t.Helper()
	res := &Resource{as: as}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-tracker", Version: "1"}, nil)
	no := false
	srv.AddTool(&mcp.Tool{
		Name: "whoami", Description: "Says which user of the tracker the call acts for.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var user string
		if req.Extra != nil {
			tok, _ := strings.CutPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
			user, _ = as.Check(tok, res.URL)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + user}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"resource": res.URL, "authorization_servers": []string{as.URL},
			"scopes_supported": []string{"issues:read", "issues:write"}, "bearer_methods_supported": []string{"header"}})
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		call := bytes.Contains(body, []byte(`"tools/call"`))
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		user, ok := as.Check(tok, res.URL)
		if !ok && (strict || call) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+res.MetadataURL+`", scope="issues:read"`)
			http.Error(w, "a token of the test tracker is needed", http.StatusUnauthorized)
			return
		}
		if call {
			var msg struct {
				Params struct{ Name string } `json:"params"`
			}
			_ = json.Unmarshal(body, &msg)
			res.mu.Lock()
			res.calls = append(res.calls, Call{User: user, Token: tok, Tool: msg.Params.Name})
			res.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	res.URL, res.MetadataURL = hs.URL+"/mcp", hs.URL+"/.well-known/oauth-protected-resource/mcp"
	return res
}

// Calls are the tools/call requests that reached the tool.
func (r *Resource) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
