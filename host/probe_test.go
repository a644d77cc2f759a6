package host

import (
	"encoding/json"
	"testing"

	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/sandbox"
)

// TestDeclarationKey: plugins that run one binary the same way share a
// probe whatever their names and configs; any difference in how the binary
// runs gets a probe of its own.
func TestDeclarationKey(t *testing.T) {
	base := remote.Spec{Name: "a", Path: "/bin/bridge", Args: []string{"-v"}, SHA256: "ab", Config: json.RawMessage(`{"x":1}`)}
	key := func(s remote.Spec) string {
		k, ok := declarationKey(s)
		if !ok {
			t.Fatalf("no key for %+v", s)
		}
		return k
	}
	same := base
	same.Name, same.Config, same.Critical = "b", json.RawMessage(`{"x":2}`), true
	if key(base) != key(same) {
		t.Error("a name or a config changed the key")
	}
	for what, change := range map[string]func(*remote.Spec){
		"path":    func(s *remote.Spec) { s.Path = "/bin/other" },
		"args":    func(s *remote.Spec) { s.Args = nil },
		"dir":     func(s *remote.Spec) { s.Dir = "/srv" },
		"sha256":  func(s *remote.Spec) { s.SHA256 = "cd" },
		"env":     func(s *remote.Spec) { s.Env = []string{"A=1"} },
		"sandbox": func(s *remote.Spec) { s.Sandbox = &sandbox.Policy{} },
	} {
		other := base
		change(&other)
		if key(other) == key(base) {
			t.Errorf("a different %s kept the key", what)
		}
	}
}
