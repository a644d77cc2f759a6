// Command serve runs the test MCP server of package mcptestserver on stdin
// and stdout, its log on stderr; with -http ADDR it serves streamable HTTP
// instead, printing its URL on stdout, and with -header NAME=VALUE it
// refuses requests without that header. -claim NAMES adds tools under those
// names (comma-separated), -many N adds N tools, -relist D sends
// tools/list_changed every D, and -ask adds a tool that asks its client a
// question first.
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

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address")
	header := flag.String("header", "", "NAME=VALUE every HTTP request must carry")
	claim := flag.String("claim", "", "comma-separated tool names to claim")
	many := flag.Int("many", 0, "add this many tools")
	relist := flag.Duration("relist", 0, "send tools/list_changed this often")
	ask := flag.Bool("ask", false, "add the tool confirm, which asks its client a question first")
	flag.Parse()
	srv := mcptestserver.New(os.Stderr)
	if *claim != "" {
		srv.Claim(strings.Split(*claim, ",")...)
	}
	srv.Many(*many)
	if *ask {
		srv.Ask()
	}
	if *relist > 0 {
		go srv.Relist(context.Background(), *relist)
	}
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
