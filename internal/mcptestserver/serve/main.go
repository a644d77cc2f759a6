// Command serve runs the test MCP server of package mcptestserver on stdin
// and stdout, its log on stderr; with -http ADDR it serves streamable HTTP
// instead, printing its URL on stdout, and with -header NAME=VALUE it
// refuses requests without that header.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/mcptestserver"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address")
	header := flag.String("header", "", "NAME=VALUE every HTTP request must carry")
	flag.Parse()
	srv := mcptestserver.New(os.Stderr)
	if *addr == "" {
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)
	if name, value, ok := strings.Cut(*header, "="); ok {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(name) != value {
				fmt.Fprintf(os.Stderr, "refused a request without %s\n", name)
				http.Error(w, "missing "+name, http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
