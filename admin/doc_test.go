package admin_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDocNamesEveryRoute: the package doc's list of routes is the admin
// API's reference; every route the server registers is in it, and it
// names no route the server does not have.
func TestDocNamesEveryRoute(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	server, err := parser.ParseFile(fset, "server.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	ast.Inspect(server, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			pattern, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			routes = append(routes, strings.Join(strings.Fields(pattern), " "))
		}
		return true
	})
	if len(routes) < 5 {
		t.Fatalf("found only %d routes in server.go (%v): does the server still register them with HandleFunc?", len(routes), routes)
	}

	doc, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Doc == nil {
		t.Fatal("doc.go has no package doc")
	}
	route := regexp.MustCompile(`^\s+(GET|HEAD|POST|PUT|PATCH|DELETE)\s+(/\S*)`)
	var documented []string
	for _, line := range strings.Split(doc.Doc.Text(), "\n") {
		if m := route.FindStringSubmatch(line); m != nil {
			documented = append(documented, m[1]+" "+m[2])
		}
	}
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("the server registers %s, which the package doc (doc.go) does not list", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("the package doc (doc.go) lists %s, which the server does not register", d)
		}
	}
}
