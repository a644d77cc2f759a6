package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

// TestPromptRedactsCredentials: the approval prompt shows the call's
// arguments without the credentials in them, and only "y" or "yes" allows.
func TestPromptRedactsCredentials(t *testing.T) {
	token := fake.New(7).GitHubToken("ghp_")
	q := admin.Question{Tool: "deploy", Arguments: `{"repo":"web","token":"` + token + `"}`, Question: "Deploy?", For: "local:ann"}
	for answer, want := range map[string]bool{"y\n": true, "yes\n": true, "\n": false, "no\n": false, "": false} {
		var stderr bytes.Buffer
		e := &env{stdin: strings.NewReader(answer), stderr: &stderr}
		if got := prompt(e, q); got != want {
			t.Errorf("answer %q: allowed = %v, want %v", answer, got, want)
		}
		out := stderr.String()
		if strings.Contains(out, token) {
			t.Fatalf("the prompt shows the token:\n%s", out)
		}
		if !strings.Contains(out, `"repo":"web"`) || !strings.Contains(out, "[redacted: github-token]") {
			t.Fatalf("the prompt does not show the arguments with the token marked:\n%s", out)
		}
	}
}
