package mcpserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkMCPHTTPFrontEnd is the server's side of a 2026-07-28 tools/call
// over streamable HTTP: a raw net/http client POSTs the request and reads
// the answer, to the hot path (Handler, as `host run` serves) and to the
// SDK's stateless handler (HandlerSDK), in one run. Its B/op is what the
// front end, the pipeline and the raw client allocate per call:
//
//	go test -run '^$' -bench MCPHTTPFrontEnd -benchmem ./mcpserver/
func BenchmarkMCPHTTPFrontEnd(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + hotMeta + `,"name":"echo","arguments":{"text":"hello"}}}`
	for _, c := range []struct {
		name string
		hot  bool
	}{{"sdk", false}, {"hot-path", true}} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b, 5*time.Second)
			h := f.srv.HandlerSDK()
			if c.hot {
				h = f.srv.Handler()
			}
			srv := httptest.NewServer(h)
			b.Cleanup(srv.Close)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			b.Cleanup(client.CloseIdleConnections)
			before := f.srv.HotCalls()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, a := rawPost(b, client, srv.URL+"/mcp", body); !strings.Contains(a, `"text":"hello"`) {
					b.Fatal(a)
				}
			}
			if served := f.srv.HotCalls() - before; (served > 0) != c.hot {
				b.Fatalf("the hot path served %d calls", served)
			}
		})
	}
}
