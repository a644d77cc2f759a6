package deployment

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The guides that are the deployment file's reference: the deployment
// guide for every block but the sandbox block, which the sandboxing guide
// describes (the deployment guide names it where it may be written).
const (
	deploymentGuide = "../docs/deployment-file.md"
	sandboxGuide    = "../docs/sandboxing.md"
)

// TestGuideNamesEverySetting: every attribute and block the schema
// declares (the structs gohcl decodes the file with) is written in its
// guide's HCL examples, in the block it belongs to. A setting added to the
// schema without a line in the guide fails here, named.
func TestGuideNamesEverySetting(t *testing.T) {
	t.Parallel()
	written := map[string]map[string]bool{
		deploymentGuide: hclNames(t, deploymentGuide),
		sandboxGuide:    hclNames(t, sandboxGuide),
	}
	var missing []string
	var walk func(typ reflect.Type, path, guide string)
	walk = func(typ reflect.Type, path, guide string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, kind, _ := strings.Cut(f.Tag.Get("hcl"), ",")
			if name == "" || (kind != "optional" && kind != "attr" && kind != "block") {
				continue // labels, bodies, ranges
			}
			at := strings.TrimPrefix(path+"."+name, ".")
			what := "attribute"
			if kind == "block" {
				what = "block"
			}
			if m := guide[len("../"):] + " lacks the " + what + " " + at; !written[guide][at] && !slices.Contains(missing, m) {
				missing = append(missing, m) // the sandbox block is walked twice
			}
			if kind != "block" {
				continue
			}
			elem := f.Type
			for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
				elem = elem.Elem()
			}
			if elem == reflect.TypeFor[sandboxSyntax]() {
				walk(elem, "sandbox", sandboxGuide)
				continue
			}
			walk(elem, at, guide)
		}
	}
	walk(reflect.TypeFor[fileSyntax](), "", deploymentGuide)
	if len(missing) > 0 {
		t.Errorf("the guides do not describe every setting of the deployment file; add a line for each:\n%s",
			strings.Join(missing, "\n"))
	}
}

var (
	hclAttr  = regexp.MustCompile(`^([a-z_0-9]+)\s*=`)
	hclBlock = regexp.MustCompile(`^([a-z_0-9]+)(\s+"[^"]*")*\s*\{`)
)

// hclNames reads the ```hcl blocks of a Markdown page and returns the
// dotted path of every attribute and block they write ("host.policy.retry",
// "plugin.restart.window"). An attribute commented out ("# egress = …", an
// alternative to the line above) counts as written.
func hclNames(t *testing.T, page string) map[string]bool {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	var stack []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in && line == "```hcl":
			in, stack = true, nil
			continue
		case !in:
			continue
		case line == "```":
			in = false
			continue
		}
		if c, ok := strings.CutPrefix(line, "#"); ok {
			if m := hclAttr.FindStringSubmatch(strings.TrimSpace(c)); m != nil {
				names[strings.Join(append(slices.Clone(stack), m[1]), ".")] = true
			}
			continue
		}
		code := stripComment(line)
		name := ""
		if m := hclBlock.FindStringSubmatch(code); m != nil {
			name = m[1]
		} else if m := hclAttr.FindStringSubmatch(code); m != nil {
			name = m[1]
		}
		if name != "" {
			names[strings.Join(append(slices.Clone(stack), name), ".")] = true
		}
		switch depth := strings.Count(code, "{") - strings.Count(code, "}"); {
		case depth > 0:
			stack = append(stack, name)
		case depth < 0 && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// stripComment cuts a # comment off an HCL line, leaving strings whole.
func stripComment(line string) string {
	quoted := false
	for i, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case r == '#' && !quoted:
			return strings.TrimSpace(line[:i])
		}
	}
	return line
}
